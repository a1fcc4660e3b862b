//! Chaos under load: worker processes run thousands of three-step jobs while the test SIGKILLs
//! and restarts them, and between kills breaks a worker another way: on Postgres it cuts the
//! worker's database connections (`pg_terminate_backend`, found by `application_name`); on
//! SQLite, which has no connection to cut, it freezes the worker (SIGSTOP) until another
//! process has taken over one of its claims, then lets it go on (SIGCONT) with claims it no
//! longer holds. Then [`invariants::check`](super::invariants::check).

use std::time::{Duration, Instant};

use super::fleet::{Fleet, Worker};
use super::invariants::{self, live_duplicates, unfinished};
use super::load::{enqueue_all, reenqueue_some, Ledger, Rng};
use crate::support::store::Store;
use crate::support::wait;

/// The other way a worker is broken, between kills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    /// Terminate its Postgres backends.
    CutConnections,
    /// SIGSTOP it until one of its claims is taken over (at most `FREEZE_BOUND`), then SIGCONT.
    Freeze,
}

/// The most a frozen worker stays frozen: two visibility timeouts, and below the busy timeout
/// the others wait on the write lock it may hold.
const FREEZE_BOUND: Duration = Duration::from_millis(3_000);

/// One chaos run.
pub struct Run {
    pub jobs: u64,
    pub workers: usize,
    /// The bound on the whole run, load and chaos included.
    pub bound: Duration,
    pub breaks: Break,
}

/// Runs the chaos and checks the invariants.
pub async fn run(store: &Store, run: Run) {
    let started = Instant::now();
    let n = run.jobs;
    super::audit::install(store).await;
    let jobs = store.jobs();
    let mut ledger = Ledger::default();
    enqueue_all(&jobs, &mut ledger, n).await;

    let mut rng = Rng::seeded();
    let mut fleet = Fleet::new(
        store,
        &[
            ("VISIBILITY_MS", "1500"),
            ("CONCURRENCY", "8"),
            ("STEP_MS", "2"),
        ],
    );
    let mut workers: Vec<Worker> = (0..run.workers).map(|_| fleet.spawn()).collect();
    let (mut kills, mut breaks, mut broken, mut dup_samples) = (0u64, 0u64, 0i64, 0u64);
    let deadline = Instant::now() + run.bound;
    let mut last_chaos = Instant::now();
    loop {
        let left = unfinished(store).await;
        assert_eq!(
            live_duplicates(store).await,
            0,
            "one live row per key, always"
        );
        dup_samples += 1;
        if left == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "chaos run did not finish within {:?}: {left} jobs unfinished",
            run.bound
        );
        // Keep breaking things while at least a twentieth of the load is left (the tail then runs
        // on a fleet that recovers), and until both kinds of break have happened: a fast drain
        // may leave room for only two.
        let both_done = kills > 0 && breaks > 0;
        if (left * 20 >= n as i64 || !both_done)
            && last_chaos.elapsed() >= Duration::from_millis(250)
        {
            last_chaos = Instant::now();
            let victim = rng.below(workers.len() as u64) as usize;
            // The first two events are one of each kind, in a random order; then either.
            let kill = match (kills, breaks) {
                (0, b) if b > 0 => true,
                (k, 0) if k > 0 => false,
                _ => rng.below(2) == 0,
            };
            if kill {
                let dead = workers.swap_remove(victim);
                dead.sigkill();
                kills += 1;
                workers.push(fleet.spawn());
            } else {
                broken += match run.breaks {
                    Break::CutConnections => terminate_backends(store, &workers[victim].app).await,
                    Break::Freeze => i64::from(freeze(store, &workers[victim]).await),
                };
                breaks += 1;
            }
            reenqueue_some(&jobs, &mut ledger, &mut rng, n).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(workers);
    let counts = invariants::check(store, &ledger, "chaos").await;
    assert_eq!(
        counts.dead + counts.other_final,
        0,
        "50 attempts outlast the chaos"
    );
    let broke = match run.breaks {
        Break::CutConnections => "connection cuts (backends terminated)",
        Break::Freeze => "freezes (a claim taken over while frozen)",
    };
    println!(
        "chaos: {n} jobs + {} re-enqueues ({} deduped, {} inserted after the first finished); \
         {kills} SIGKILLs, {breaks} {broke}: {broken}; {dup_samples} live-key samples; {:.1} s",
        ledger.reenqueued,
        ledger.deduped,
        ledger.inserted_again,
        started.elapsed().as_secs_f64()
    );
    assert!(kills > 0 && breaks > 0, "the chaos broke something");
}

/// Terminates every backend of `app`: answers how many.
pub async fn terminate_backends(store: &Store, app: &str) -> i64 {
    jobs::sqlx::query_scalar(
        "select count(*) from (select pg_terminate_backend(pid) from pg_stat_activity \
         where application_name = $1) t",
    )
    .bind(app)
    .fetch_one(store.pg_pool())
    .await
    .expect("terminate backends")
}

/// Freezes `worker` until another process claims a row it held (bounded), then thaws it:
/// answers whether a claim was taken over while it was frozen.
async fn freeze(store: &Store, worker: &Worker) -> bool {
    let s = store.schema();
    let taken_over = format!(
        "select count(*) from {s}.claim_log c where c.app = '{}' and exists \
         (select 1 from {s}.claim_log d where d.job_id = c.job_id and d.claims > c.claims)",
        worker.app
    );
    let before = store.count(&taken_over).await;
    worker.signal("STOP");
    let took = wait::within(FREEZE_BOUND, || async {
        store.count(&taken_over).await > before
    })
    .await;
    worker.signal("CONT");
    took
}
