//! Chaos through a fault-injecting proxy (`support/fault_proxy.rs`), against the real servers:
//! worker processes (`tests/bin/chaos_worker.rs`) and the test's enqueuing client reach
//! Postgres, or the test's own `redis-server`, only through a TCP proxy on loopback that
//! delays chunks, resets connections (at once, or after a stall longer than a lease), and
//! refuses new connections for a while, on a schedule drawn from a seed. The workers run the
//! chaos load (three-step jobs); the enqueues go through the proxy too, so an enqueue the
//! client saw answered must run, and one that failed may or may not exist (only under a key
//! whose enqueue failed). Once every job is final (a bounded wait), the proxy holds fire, every
//! worker process must claim again (it recovered on its own), and the invariants of the other
//! chaos runs are checked over the recorded history (`support/chaos/invariants.rs`,
//! `support/chaos/on_redis/invariants.rs`): nothing acknowledged lost, no completed step run
//! again, no claim ordinal handed out twice, no settle from a process that did not hold the
//! claim. A run in which the proxy reset nothing fails: it proved nothing.
//!
//! A few fixed seeds run by default; `PROXY_SEED=<n>` runs that one seed (on each store). The
//! seed is printed first, and every failure names it with the command that replays it:
//! `PROXY_SEED=17 cargo test -p jobs-tests --test processes chaos_proxy -- --nocapture`. A
//! seed replays the proxy's decisions, not the processes' timing (see the proxy's doc).

use crate::chaos;
use crate::support;

use std::future::Future;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use chaos::fleet::{Fleet, Worker};
use chaos::invariants::{self, Answers};
use chaos::load::{reenqueue_some, Ledger, Rng};
use chaos::on_redis::store::RedisStore;
use chaos::{Chaos, ChaosSteps, Drain, DrainWork};
use jobs::driver::{PostgresDriver, RedisDriver};
use jobs::sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use jobs::Jobs;
use support::fault_proxy::{self, FaultCounts, FaultProxy, Schedule};
use support::pg;
use support::store::Store;

/// The seeds each CI run replays on Postgres, and on Redis.
const POSTGRES_SEEDS: [u64; 2] = [17, 4_242];
const REDIS_SEEDS: [u64; 2] = [29, 9_001];

/// Jobs of the load of each seed's run: Redis' multiplexed connections drain them faster.
const POSTGRES_JOBS: u64 = 500;
const REDIS_JOBS: u64 = 600;
/// Worker processes, and the jobs each holds at once.
const WORKERS: usize = 3;
const CONCURRENCY: u64 = 8;
/// The bound on one seed's run, from the first enqueue to the last job final.
const BOUND: Duration = Duration::from_secs(50);
/// Jobs per enqueue call of the load: a batch whose answer is lost is asked again whole. Small,
/// so the load's enqueues meet faults too.
const BATCH: u64 = 10;
/// The bound on each worker's probe claim, and on the probe jobs' end.
const PROBE_BOUND: Duration = Duration::from_secs(30);
/// How often a few keys are enqueued again while the load runs.
const REENQUEUE_EVERY: Duration = Duration::from_millis(300);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_proxy_postgres_faults_lose_no_answered_enqueue_and_rerun_no_completed_step() {
    for seed in seeds(&POSTGRES_SEEDS) {
        postgres_run(seed).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_proxy_redis_faults_lose_no_answered_enqueue_and_rerun_no_completed_step() {
    for seed in seeds(&REDIS_SEEDS) {
        redis_run(seed).await;
    }
}

/// The proxy itself, on an echo server of the test's own: holding fire it forwards bytes
/// untouched both ways; firing a schedule that resets every chunk, it resets the connection
/// and counts the fault. What the store runs rely on it to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_proxy_forwards_untouched_holding_fire_and_counts_each_fault_it_applies() {
    use std::io::{Read, Write};

    let echo = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an echo server");
    let upstream = echo.local_addr().expect("its address");
    // Two connections, each echoed until its client goes.
    std::thread::spawn(move || {
        for conn in echo.incoming().take(2) {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let mut reader = conn.try_clone().expect("clone the socket");
                let _ = std::io::copy(&mut reader, &mut conn);
            });
        }
    });
    let always_reset = Schedule {
        reset: 10_000,
        refuse: 0,
        ..Schedule::default()
    };
    let proxy = FaultProxy::start(upstream, 7, always_reset);
    let addr = proxy.addr();
    // One round trip; answers what came back, or the error.
    let round_trip = move || {
        tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
            let mut conn = std::net::TcpStream::connect(addr)?;
            conn.set_read_timeout(Some(Duration::from_secs(10)))?;
            conn.write_all(b"ping")?;
            let mut answer = [0u8; 4];
            conn.read_exact(&mut answer)?;
            Ok(answer.to_vec())
        })
    };
    let answer = round_trip().await.expect("the blocking task");
    assert_eq!(answer.expect("holding fire, a round trip"), b"ping");
    assert_eq!(proxy.counts().broken(), 0, "{}", proxy.counts());

    proxy.fire();
    let broken = round_trip().await.expect("the blocking task");
    assert!(broken.is_err(), "firing, the connection is reset");
    let counts = proxy.counts();
    assert_eq!((counts.resets, counts.connections), (1, 2), "{counts}");
    let log = proxy.log();
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0].kind, fault_proxy::FaultKind::Reset);
    assert_eq!(log[0].connection, 2);
}

/// `PROXY_SEED`, or the fixed seeds.
fn seeds(fixed: &[u64]) -> Vec<u64> {
    match std::env::var("PROXY_SEED") {
        Ok(seed) => vec![seed
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("PROXY_SEED is not a number: {seed}"))],
        Err(_) => fixed.to_vec(),
    }
}

/// One seed's run on one store: names the seed and its replay command in every failure (a
/// panic anywhere in the run prints it as it unwinds).
struct Replay {
    store: &'static str,
    seed: u64,
}

impl Replay {
    fn new(store: &'static str, seed: u64) -> Replay {
        let replay = Replay { store, seed };
        println!("chaos_proxy {store}: {replay}");
        replay
    }
}

impl std::fmt::Display for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seed {} (replay: PROXY_SEED={} cargo test -p jobs-tests --test processes \
             chaos_proxy_{} -- --nocapture)",
            self.seed, self.seed, self.store
        )
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("chaos_proxy {} failed at {self}", self.store);
        }
    }
}

/// Prints the proxy's counts and its latest faults when the run fails, so a failure shows what
/// was injected just before it.
struct FaultsOnFailure<'a>(&'a FaultProxy);

impl Drop for FaultsOnFailure<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.0.log();
            let latest: Vec<String> = log[log.len().saturating_sub(20)..]
                .iter()
                .map(|fault| format!("  {fault}"))
                .collect();
            eprintln!(
                "{}\nthe latest faults:\n{}",
                self.0.counts(),
                latest.join("\n")
            );
        }
    }
}

/// Postgres' schedule: each worker holds a pool of connections, one statement's round trip
/// each at a time, so a chunk is about one message. Refusal spells are rare: a pool dials again
/// at once, so a spell refuses hundreds of connections and fails every attempt meanwhile.
fn postgres_schedule() -> Schedule {
    Schedule {
        reset: 15,
        stall: 6,
        delay: 400,
        refuse: 20,
        stall_ms: (300, 2_500),
        refuse_ms: (100, 800),
    }
}

/// Redis' schedule: each worker multiplexes its commands on one connection (and its wake
/// subscription on another), so a chunk carries many commands and a reset cuts them all; the
/// rates are higher per chunk to break as often per job as on Postgres.
fn redis_schedule() -> Schedule {
    Schedule {
        reset: 60,
        stall: 25,
        delay: 800,
        refuse: 150,
        stall_ms: (300, 2_500),
        refuse_ms: (100, 1_000),
    }
}

/// The worker processes' settings: leases short enough that a stall outlasts some.
fn worker_env() -> Vec<(&'static str, String)> {
    vec![
        ("VISIBILITY_MS", "1500".into()),
        ("CONCURRENCY", CONCURRENCY.to_string()),
        ("STEP_MS", "2".into()),
    ]
}

fn env_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

// ---------------------------------------------------------------------------------------------
// Postgres.

async fn postgres_run(seed: u64) {
    let replay = Replay::new("postgres", seed);
    let started = Instant::now();
    let store = Store::postgres("chaos_proxy").await;
    chaos::audit::install(&store).await;
    let proxy = FaultProxy::start(
        fault_proxy::upstream_of(&store.url(), 5432),
        seed,
        postgres_schedule(),
    );
    let _faults_on_failure = FaultsOnFailure(&proxy);
    let url = fault_proxy::through(&store.url(), proxy.addr());
    // The test's enqueues go through the proxy too; its reads for the checks do not.
    let options = PostgresDriver::tune(url.parse::<PgConnectOptions>().expect("the URL parses"));
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy_with(options);
    let client = Jobs::new(PostgresDriver::new(pool, store.schema()).expect("schema"));
    let env = worker_env();
    let mut fleet = Fleet::on(url, store.schema(), &env_refs(&env));
    let mut workers: Vec<Worker> = (0..WORKERS).map(|_| fleet.spawn()).collect();

    proxy.fire();
    let run = Load::new(seed, POSTGRES_JOBS);
    let mut loaded = run
        .drive(&client, &proxy, &replay, || async {
            store.try_count(&unfinished_sql(&store)).await.ok()
        })
        .await;
    proxy.hold_fire();
    let probed = probe(
        &store,
        &store.jobs(),
        &mut loaded.ledger,
        &mut workers,
        &replay,
    )
    .await;
    let faults = proxy.counts();
    drop(workers);

    let what = format!("postgres {replay}");
    let counts = invariants::check_with(&store, &loaded.ledger, &what, Answers::SomeLost).await;
    assert_eq!(
        counts.dead + counts.other_final,
        0,
        "{what}: 50 attempts outlast the faults"
    );
    let lost = counts.jobs - loaded.ledger.ids.len() as i64;
    report("postgres", &loaded, &faults, lost, probed, started, &replay);
    faults_happened(&faults, &replay);
}

fn unfinished_sql(store: &Store) -> String {
    format!(
        "select count(*) from {}.x_jobs where state not in ('done', 'failed', 'dead', 'cancelled')",
        store.schema()
    )
}

// ---------------------------------------------------------------------------------------------
// Redis.

async fn redis_run(seed: u64) {
    let replay = Replay::new("redis", seed);
    let started = Instant::now();
    let store = RedisStore::start("chaos_proxy_redis").await;
    store.install_audit().await;
    let upstream = SocketAddr::from(([127, 0, 0, 1], store.server.port()));
    let proxy = FaultProxy::start(upstream, seed, redis_schedule());
    let _faults_on_failure = FaultsOnFailure(&proxy);
    let url = fault_proxy::through(store.url(), proxy.addr());
    // Connected while the proxy holds fire: the connect's durability check is not under test.
    let client = Jobs::new(
        RedisDriver::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("{replay}: connect through the proxy: {e}")),
    );
    let mut env = worker_env();
    env.push(("SIDE_DATABASE_URL", pg::database_url().to_string()));
    let mut fleet = Fleet::on(url, store.schema(), &env_refs(&env));
    let mut workers: Vec<Worker> = (0..WORKERS).map(|_| fleet.spawn()).collect();

    proxy.fire();
    let run = Load::new(seed, REDIS_JOBS);
    let mut loaded = run
        .drive(&client, &proxy, &replay, || async {
            store.totals().await.map(|t| t.live as i64)
        })
        .await;
    proxy.hold_fire();
    let probed = probe(
        &store,
        &store.jobs(),
        &mut loaded.ledger,
        &mut workers,
        &replay,
    )
    .await;
    let faults = proxy.counts();
    drop(workers);

    let what = format!("redis {replay}");
    let counts = chaos::on_redis::invariants::check(&store, &loaded.ledger, &what).await;
    assert_eq!(
        counts.dead + counts.other_final,
        0,
        "{what}: 50 attempts outlast the faults"
    );
    report(
        "redis",
        &loaded,
        &faults,
        counts.enqueues_answer_lost,
        probed,
        started,
        &replay,
    );
    faults_happened(&faults, &replay);
}

// ---------------------------------------------------------------------------------------------
// The load, the probe, the report.

/// One seed's load: the jobs enqueued through the proxy, then a few keys again now and then
/// until all but a twentieth are final, then a bounded wait for the rest.
struct Load {
    jobs: u64,
    rng: Rng,
    deadline: Instant,
}

/// What the load and the probe enqueued.
struct Loaded {
    jobs: u64,
    ledger: Ledger,
    /// Load batches whose enqueue failed and was asked again.
    failed_batches: u64,
    load_s: f64,
}

impl Load {
    fn new(seed: u64, jobs: u64) -> Load {
        Load {
            jobs,
            // The re-enqueued keys follow the seed too.
            rng: Rng::from_seed(seed),
            deadline: Instant::now() + BOUND,
        }
    }

    /// Enqueues the load and waits until `live` (the jobs not yet final, `None` while it cannot
    /// be read) is 0, re-enqueueing a few keys meanwhile.
    async fn drive<F, Fut>(
        mut self,
        client: &Jobs,
        proxy: &FaultProxy,
        replay: &Replay,
        live: F,
    ) -> Loaded
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Option<i64>>,
    {
        let started = Instant::now();
        let mut ledger = Ledger::default();
        let failed_batches = self.enqueue(client, &mut ledger, proxy, replay).await;
        let mut last = Instant::now();
        loop {
            let left = live().await;
            if left == Some(0) {
                break;
            }
            assert!(
                Instant::now() < self.deadline,
                "{replay}: jobs still not final after {BOUND:?} ({left:?} left); {}",
                proxy.counts()
            );
            let most_left = left.is_some_and(|l| l * 20 >= self.jobs as i64);
            if most_left && last.elapsed() >= REENQUEUE_EVERY {
                last = Instant::now();
                reenqueue_some(client, &mut ledger, &mut self.rng, self.jobs).await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Loaded {
            jobs: self.jobs,
            ledger,
            failed_batches,
            load_s: started.elapsed().as_secs_f64(),
        }
    }

    /// Enqueues jobs `0..self.jobs` in batches through the proxy. A batch that fails may have
    /// landed: it is asked again whole (a key still held by a live job answers that job,
    /// deduped; one whose job already finished lands a new job, and the first one is then a
    /// job no answer named). Answers how many batches failed.
    async fn enqueue(
        &self,
        client: &Jobs,
        ledger: &mut Ledger,
        proxy: &FaultProxy,
        replay: &Replay,
    ) -> u64 {
        let (mut start, mut failed) = (0, 0);
        while start < self.jobs {
            let end = (start + BATCH).min(self.jobs);
            match client
                .enqueue_many::<ChaosSteps, _>((start..end).map(|n| Chaos { n }))
                .await
            {
                Ok(answers) => {
                    for (n, answer) in (start..end).zip(&answers) {
                        ledger.note(n, answer);
                    }
                    start = end;
                }
                Err(_) => {
                    failed += 1;
                    ledger.unanswered.extend(start..end);
                    assert!(
                        Instant::now() < self.deadline,
                        "{replay}: the load could not be enqueued within {BOUND:?}; {}",
                        proxy.counts()
                    );
                    // A refused connection fails at once: pace the next try.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        failed
    }
}

/// Where the audit's claims are read: a Postgres schema of the test's own either way.
trait Audit {
    fn audit_schema(&self) -> &str;
    fn audit_count(&self, sql: String) -> impl Future<Output = i64>;
    /// Whether every job of the queue is final (`false` while that cannot be read).
    fn all_final(&self) -> impl Future<Output = bool>;
    /// What the store shows of worker process `app`, for a failure message: its claims, and on
    /// Postgres its sessions (state, wait, the statement's text, never its values).
    fn diagnose(&self, app: &str) -> impl Future<Output = String>;
}

/// Worker process `app`'s claims in the audit: how many, and how long since the last.
async fn claims_of(store: &impl Audit, app: &str, at_us: &str) -> String {
    let s = store.audit_schema();
    let count = store
        .audit_count(format!(
            "select count(*) from {s}.claim_log where app = '{app}'"
        ))
        .await;
    let since_ms = store
        .audit_count(format!(
            "select cast(coalesce((extract(epoch from clock_timestamp()) * 1000000 \
             - max({at_us})) / 1000, -1) as bigint) from {s}.claim_log where app = '{app}'"
        ))
        .await;
    format!("{count} claims, the last {since_ms} ms ago")
}

impl Audit for Store {
    fn audit_schema(&self) -> &str {
        self.schema()
    }

    async fn audit_count(&self, sql: String) -> i64 {
        self.count(&sql).await
    }

    async fn all_final(&self) -> bool {
        matches!(self.try_count(&unfinished_sql(self)).await, Ok(0))
    }

    async fn diagnose(&self, app: &str) -> String {
        let claims = claims_of(self, app, "extract(epoch from at) * 1000000").await;
        // The statement's text only (its placeholders, never the values bound to them).
        let sessions: Vec<String> = jobs::sqlx::query_scalar(
            "select format('%s for %s s (wait %s): %s', state, \
             round(cast(extract(epoch from clock_timestamp() - state_change) as numeric), 1), \
             coalesce(wait_event, 'none'), left(query, 100)) \
             from pg_stat_activity where application_name = $1",
        )
        .bind(app)
        .fetch_all(self.pg_pool())
        .await
        .unwrap_or_default();
        format!("{claims}; sessions: {sessions:#?}")
    }
}

impl Audit for RedisStore {
    fn audit_schema(&self) -> &str {
        self.schema()
    }

    async fn audit_count(&self, sql: String) -> i64 {
        self.count(&sql).await
    }

    async fn all_final(&self) -> bool {
        self.totals().await.is_some_and(|t| t.live == 0)
    }

    async fn diagnose(&self, app: &str) -> String {
        claims_of(self, app, "returned_us").await
    }
}

/// Proves every worker process still claims once the faults stop (it recovered on its own):
/// for each in turn, with the others frozen (SIGSTOP) so no race decides it, enqueues one short
/// job straight to the server and waits until that process has claimed it; then waits until
/// every probe job is final. Notes them in `ledger`; answers how many.
async fn probe(
    store: &impl Audit,
    direct: &Jobs,
    ledger: &mut Ledger,
    workers: &mut [Worker],
    replay: &Replay,
) -> u64 {
    let s = store.audit_schema();
    for worker in workers.iter_mut() {
        assert!(
            worker.child.try_wait().expect("poll the worker").is_none(),
            "{replay}: worker {} exited",
            worker.app
        );
    }
    for (i, worker) in workers.iter().enumerate() {
        let others: Vec<&Worker> = workers.iter().filter(|w| w.app != worker.app).collect();
        others.iter().for_each(|w| w.signal("STOP"));
        let n = i as u64;
        let answer = DrainWork::enqueue(direct, Drain { n, ms: 10 })
            .await
            .unwrap_or_else(|e| panic!("{replay}: enqueue a probe job: {e}"));
        ledger.note(1_000_000 + n, &answer);
        let claimed = format!(
            "select count(*) from {s}.claim_log where app = '{}' and job_id = '{}'",
            worker.app, answer.id
        );
        let claimed = support::wait::within(PROBE_BOUND, || async {
            store.audit_count(claimed.clone()).await > 0
        })
        .await;
        others.iter().for_each(|w| w.signal("CONT"));
        if !claimed {
            let state = store.diagnose(&worker.app).await;
            panic!(
                "{replay}: worker {} claimed no probe job within {PROBE_BOUND:?} of the faults' \
                 end, the other workers frozen: {state}",
                worker.app
            );
        }
    }
    support::wait::until(
        PROBE_BOUND,
        &format!("the probe jobs to finish ({replay})"),
        || store.all_final(),
    )
    .await;
    workers.len() as u64
}

fn report(
    store: &str,
    enqueued: &Loaded,
    faults: &FaultCounts,
    lost: i64,
    probed: u64,
    started: Instant,
    replay: &Replay,
) {
    let ledger = &enqueued.ledger;
    println!(
        "chaos_proxy {store} {replay}: {} jobs ({} load batches failed and asked again) + \
         {} re-enqueues answered ({} deduped, {} inserted after the first finished); {} keys \
         with a failed enqueue, {lost} jobs no answer named; load final in {:.1} s; then each \
         of {WORKERS} workers claimed again, the others frozen ({probed} probe jobs); {:.1} s \
         in all\n  faults: {faults}",
        enqueued.jobs,
        enqueued.failed_batches,
        ledger.reenqueued,
        ledger.deduped,
        ledger.inserted_again,
        ledger.unanswered.len(),
        enqueued.load_s,
        started.elapsed().as_secs_f64()
    );
}

/// A run the proxy did not break is a failed test, not a pass.
fn faults_happened(faults: &FaultCounts, replay: &Replay) {
    assert!(
        faults.resets + faults.stall_resets > 0,
        "{replay}: the proxy reset no connection: the run proved nothing ({faults})"
    );
    assert!(
        faults.delays > 0,
        "{replay}: the proxy delayed nothing ({faults})"
    );
}
