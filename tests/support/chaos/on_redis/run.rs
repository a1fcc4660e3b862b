//! The Redis chaos run: worker processes run three-step jobs on the test's own `redis-server`
//! while the test breaks one thing over and over ([`Break`]), re-enqueues a few keys at each
//! break, then proves every worker process still claims (it reconnected on its own), and checks
//! the invariants ([`invariants::check`](super::invariants::check)).

use std::time::{Duration, Instant};

use super::connections;
use super::invariants::{self, Counts};
use super::store::RedisStore;
use crate::chaos::fleet::Worker;
use crate::chaos::load::{enqueue_all, reenqueue_some, Ledger, Rng};
use crate::chaos::{Drain, DrainWork};
use crate::support::wait;

/// What the test breaks, over and over, while the load runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    /// SIGKILL a worker process, mid-step, and start another in its place; or, one time in
    /// three when none is frozen, freeze one (SIGSTOP) until another process has claimed a job
    /// it held (its lease lapsed) or [`FREEZE_BOUND`] passed, then let it go on (SIGCONT) with
    /// claims it no longer holds. The kills go on meanwhile, never of the frozen one.
    Workers,
    /// SIGKILL `redis-server` and start it again on its directory (AOF, `appendfsync always`),
    /// at each of [`Run::restarts`] fractions of the load.
    Server,
    /// `CLIENT KILL` one worker process's connections (by address), or every ordinary
    /// connection (`TYPE normal`, the test's own included) one time in four.
    Connections,
}

/// One chaos run.
pub struct Run {
    /// Jobs of the load, each a fresh key.
    pub jobs: u64,
    pub workers: usize,
    /// The bound on the whole run, load and chaos included.
    pub bound: Duration,
    pub breaks: Break,
    /// How often to break something (`Workers`, `Connections`).
    pub cadence: Duration,
    /// How many server restarts (`Server`), spread evenly over the load.
    pub restarts: u32,
}

/// How long the server stays down at each restart: long enough that every worker's calls fail
/// meanwhile (and its claims' leases run on), short against the visibility timeout.
const OUTAGE: Duration = Duration::from_millis(400);

/// Jobs each worker process holds at once (the workers' `CONCURRENCY`).
const CONCURRENCY: u64 = 8;

/// Runs the chaos, the reconnection probe and the invariants; answers the counts.
pub async fn run(test: &str, run: Run) -> Counts {
    let started = Instant::now();
    let mut store = RedisStore::start(test).await;
    store.install_audit().await;
    let jobs = store.jobs();
    let n = run.jobs;
    let mut ledger = Ledger::default();
    enqueue_all(&jobs, &mut ledger, n).await;

    let mut rng = Rng::seeded();
    let concurrency = CONCURRENCY.to_string();
    let mut fleet = store.fleet(&[
        ("VISIBILITY_MS", "1500"),
        ("CONCURRENCY", &concurrency),
        ("STEP_MS", "2"),
    ]);
    let mut workers: Vec<Worker> = (0..run.workers).map(|_| fleet.spawn()).collect();
    let (mut breaks, mut broken) = (0u64, 0u64);
    // The processes frozen so far (`Workers`).
    let mut frozen_apps: Vec<String> = Vec::new();
    let mut outages = Vec::new();
    let deadline = Instant::now() + run.bound;
    let mut last_break = Instant::now();
    let mut frozen: Option<Frozen> = None;
    loop {
        if let Some(f) = &frozen {
            if f.over(&store).await {
                f.thaw(&workers);
                frozen = None;
            }
        }
        // `None`: the server is restarting, or this test's own connection was just cut.
        let totals = store.totals().await;
        if totals.is_some_and(|t| t.live == 0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the chaos run did not finish within {:?}: {totals:?}",
            run.bound
        );
        let due = match run.breaks {
            // Restart `k` once `k / (restarts + 1)` of the load is done.
            Break::Server => {
                breaks < u64::from(run.restarts)
                    && totals
                        .is_some_and(|t| t.done * u64::from(run.restarts + 1) >= n * (breaks + 1))
            }
            // Keep breaking while at least a twentieth of the load is left: the tail then runs
            // on a fleet that recovers.
            Break::Workers | Break::Connections => {
                totals.is_some_and(|t| t.live * 20 >= n) && last_break.elapsed() >= run.cadence
            }
        };
        if due {
            last_break = Instant::now();
            breaks += 1;
            match run.breaks {
                Break::Workers => {
                    let victim = rng.below(workers.len() as u64) as usize;
                    let is_frozen = |w: &Worker| frozen.as_ref().is_some_and(|f| f.app == w.app);
                    if frozen.is_none() && rng.below(3) == 0 {
                        frozen_apps.push(workers[victim].app.clone());
                        frozen = Some(Frozen::freeze(&store, &workers[victim]).await);
                    } else if !is_frozen(&workers[victim]) {
                        workers.swap_remove(victim).sigkill();
                        workers.push(fleet.spawn());
                        broken += 1;
                    }
                }
                Break::Server => {
                    let down = Instant::now();
                    store.server.kill();
                    tokio::time::sleep(OUTAGE).await;
                    store.server.restart();
                    outages.push(down.elapsed());
                    broken += 1;
                }
                Break::Connections => {
                    broken += if rng.below(4) == 0 {
                        connections::kill_every_normal_connection(&store.server)
                    } else {
                        let victim = &workers[rng.below(workers.len() as u64) as usize];
                        connections::kill_process_connections(&store.server, victim.child.id())
                    };
                }
            }
            reenqueue_some(&jobs, &mut ledger, &mut rng, n).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if let Some(f) = frozen.take() {
        f.thaw(&workers);
    }
    let chaos_s = started.elapsed().as_secs_f64();
    let probed = probe(&store, &jobs, &mut ledger, &mut workers).await;
    drop(workers);
    let counts = invariants::check(&store, &ledger, test).await;
    assert_eq!(
        counts.dead + counts.other_final,
        0,
        "50 attempts outlast the chaos"
    );
    let mut taken = 0;
    for app in &frozen_apps {
        taken += store.count(&taken_over(&store, app)).await;
    }
    let broke = match run.breaks {
        Break::Workers => format!(
            "{broken} worker SIGKILLs (each replaced), {} freezes ({taken} claims of frozen \
             processes taken over)",
            frozen_apps.len()
        ),
        Break::Server => format!(
            "{breaks} redis-server SIGKILLs, each down and up again in {:?} ms",
            outages.iter().map(Duration::as_millis).collect::<Vec<_>>()
        ),
        Break::Connections => format!("{breaks} CLIENT KILLs cutting {broken} connections"),
    };
    println!(
        "{test}: {n} jobs + {} re-enqueues ({} deduped, {} inserted after the first finished); \
         {broke}; load done in {chaos_s:.1} s; then every one of {} workers claimed again \
         ({probed} probe jobs); {:.1} s in all",
        ledger.reenqueued,
        ledger.deduped,
        ledger.inserted_again,
        run.workers,
        started.elapsed().as_secs_f64()
    );
    assert!(breaks > 0, "the chaos broke something");
    counts
}

/// The most a worker stays frozen: two visibility timeouts.
const FREEZE_BOUND: Duration = Duration::from_millis(3_000);

/// A worker frozen (SIGSTOP) until another process claims a job it held (a claim it was handed
/// before the freeze; one it was being handed when frozen reaches the audit only once thawed).
struct Frozen {
    app: String,
    since: Instant,
    /// Its claims taken over by a later claim when it was frozen.
    before: i64,
}

impl Frozen {
    async fn freeze(store: &RedisStore, worker: &Worker) -> Frozen {
        let before = store.count(&taken_over(store, &worker.app)).await;
        worker.signal("STOP");
        Frozen {
            app: worker.app.clone(),
            since: Instant::now(),
            before,
        }
    }

    /// Whether to thaw it: a claim of it was taken over, or the bound passed.
    async fn over(&self, store: &RedisStore) -> bool {
        self.since.elapsed() >= FREEZE_BOUND || self.taken(store).await
    }

    async fn taken(&self, store: &RedisStore) -> bool {
        store.count(&taken_over(store, &self.app)).await > self.before
    }

    /// SIGCONT.
    fn thaw(&self, workers: &[Worker]) {
        let worker = workers
            .iter()
            .find(|w| w.app == self.app)
            .expect("a frozen worker is never killed");
        worker.signal("CONT");
    }
}

/// Counts the claims of process `app` a later claim of the same job took over.
fn taken_over(store: &RedisStore, app: &str) -> String {
    let s = store.schema();
    format!(
        "select count(*) from {s}.claim_log c where c.app = '{app}' and exists \
         (select 1 from {s}.claim_log d where d.job_id = c.job_id and d.claims > c.claims)"
    )
}

/// Proves every worker process still claims once the chaos is over (so each reconnected on its
/// own): enqueues rounds of as many one-second jobs as the fleet has slots, too many for the
/// other processes to hold while a round lasts, until each process has claimed one, for at most
/// [`PROBE_BOUND`]. A process that is only slow for a moment (a busy machine) claims in a later
/// round; one that never claims again fails the test. Answers how many probe jobs ran.
async fn probe(
    store: &RedisStore,
    jobs: &jobs::Jobs,
    ledger: &mut Ledger,
    workers: &mut [Worker],
) -> u64 {
    let round = workers.len() as u64 * CONCURRENCY;
    let deadline = Instant::now() + PROBE_BOUND;
    let mut ids = Vec::new();
    let mut sent = 0;
    loop {
        for n in sent..sent + round {
            let answer = DrainWork::enqueue(jobs, Drain { n, ms: 1_000 })
                .await
                .expect("enqueue a probe job");
            ledger.note(1_000_000 + n, &answer);
            ids.push(format!("'{}'", answer.id));
        }
        sent += round;
        let probes = ids.join(", ");
        // The round is over once its jobs are: whoever claimed none of it by then waits for the
        // next one.
        let left = deadline.saturating_duration_since(Instant::now());
        wait::within(left, || async {
            unclaimed(store, workers, &probes).await.is_none()
                || store.totals().await.is_some_and(|t| t.live == 0)
        })
        .await;
        for worker in workers.iter_mut() {
            assert!(
                worker.child.try_wait().expect("poll the worker").is_none(),
                "worker {} exited",
                worker.app
            );
        }
        let Some(idle) = unclaimed(store, workers, &probes).await else {
            break;
        };
        assert!(
            Instant::now() < deadline,
            "worker {idle} claimed none of {sent} probe jobs within {PROBE_BOUND:?}"
        );
    }
    wait::until(
        Duration::from_secs(30),
        "the probe jobs to finish",
        || async { store.totals().await.is_some_and(|t| t.live == 0) },
    )
    .await;
    sent
}

/// The first worker process that claimed none of `probes` (quoted ids, comma-separated).
async fn unclaimed(store: &RedisStore, workers: &[Worker], probes: &str) -> Option<String> {
    let s = store.schema();
    for worker in workers {
        let claimed = format!(
            "select count(*) from {s}.claim_log where app = '{}' and job_id in ({probes})",
            worker.app
        );
        if store.count(&claimed).await == 0 {
            return Some(worker.app.clone());
        }
    }
    None
}

/// How long every worker process has to claim a probe job once the chaos is over: three times
/// the driver's response timeout, so a call cut with its connection and left to time out does not
/// fail the test alone.
const PROBE_BOUND: Duration = Duration::from_secs(30);
