//! Chaos on Postgres: real worker processes (`tests/bin/chaos_worker.rs`) run thousands of
//! three-step jobs while the test SIGKILLs and restarts them, terminates their database
//! connections (`pg_terminate_backend`, found by `application_name`), restarts the server, and
//! SIGTERMs them; then it checks what must hold whatever broke:
//!
//! - every job reaches a final state, and none is lost (every id an enqueue answered is a row);
//! - no completed step runs again: each step closure asks the store whether its step is already
//!   completed before its side effect (never), and each later step records the output of the
//!   step before it, which must equal the stored output (a re-run would have replaced it);
//! - no settle lands from a worker that no longer holds the row: an audit trigger on `x_jobs`
//!   logs every claim with the claiming process's `application_name`, and every settle with the
//!   settling one's, and the two must be the same process for the same claim ordinal;
//! - one live row per idempotency key throughout, while the same keys are enqueued again.
//!
//! The counts are printed at the end (`cargo test --test chaos_postgres -- --nocapture`).

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe, PgPool};
use support::pg;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Chaos {
    n: u64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Drain {
    n: u64,
    ms: u64,
}

/// The declarations the chaos worker runs; here only to enqueue them.
#[job(
    key = "chaos:{n}",
    tenant = none,
    retry(attempts = 50, backoff = fixed, delay = "100ms", jitter = none)
)]
async fn chaos_steps(_run: Run, _input: Chaos) -> Result<(), JobError> {
    unreachable!("the chaos worker process runs this job")
}

#[job(
    key = "drain:{n}",
    tenant = none,
    retry(attempts = 5, backoff = fixed, delay = "100ms", jitter = none)
)]
async fn drain_work(_run: Run, _input: Drain) -> Result<(), JobError> {
    unreachable!("the chaos worker process runs this job")
}

/// Jobs in the main chaos run (`CHAOS_JOBS` overrides).
const CHAOS_JOBS: u64 = 2_000;
/// Worker processes in the main chaos run.
const CHAOS_WORKERS: usize = 4;
/// The bound on the whole main chaos run, load and chaos included.
const CHAOS_BOUND: Duration = Duration::from_secs(150);

// ---------------------------------------------------------------------------------------------
// Worker processes.

struct Worker {
    app: String,
    child: Child,
    stdout: BufReader<ChildStdout>,
}

struct Fleet {
    url: String,
    schema: String,
    /// Short and unique per test: application names are global to the server.
    tag: String,
    generation: u32,
    env: Vec<(&'static str, String)>,
}

impl Fleet {
    fn new(url: &str, schema: &str, env: &[(&'static str, &str)]) -> Self {
        let tag = schema[schema.len() - 8..].to_string();
        Fleet {
            url: url.to_string(),
            schema: schema.to_string(),
            tag,
            generation: 0,
            env: env.iter().map(|(k, v)| (*k, v.to_string())).collect(),
        }
    }

    /// Starts one worker process and waits (bounded by the process) for its `ready`.
    fn spawn(&mut self) -> Worker {
        self.generation += 1;
        let app = format!("chaos-{}-{}", self.tag, self.generation);
        let mut command = Command::new(env!("CARGO_BIN_EXE_chaos-worker"));
        command
            .env("DATABASE_URL", &self.url)
            .env("JOBS_SCHEMA", &self.schema)
            .env("CHAOS_APP", &app)
            .env("RUST_LOG", "off")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in &self.env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("the chaos worker starts");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .expect("the chaos worker reports");
        assert_eq!(line.trim(), "ready", "worker {app} did not start");
        Worker { app, child, stdout }
    }
}

impl Worker {
    fn sigkill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn sigterm(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "SIGTERM {}", self.app);
    }
}

/// A small deterministic generator (xorshift), seeded and printed, so a failing run can be
/// replayed with `CHAOS_SEED`.
struct Rng(u64);

impl Rng {
    fn seeded() -> Self {
        let seed = std::env::var("CHAOS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(7, |d| d.as_nanos() as u64)
                    | 1
            });
        println!("chaos seed: {seed} (replay with CHAOS_SEED={seed})");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

// ---------------------------------------------------------------------------------------------
// The schema's test tables: side effects and the settle audit.

async fn exec(pool: &PgPool, sql: String) {
    sqlx::raw_sql(AssertSqlSafe(sql.clone()))
        .execute(pool)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{sql}"));
}

async fn count(pool: &PgPool, sql: String) -> i64 {
    sqlx::query_scalar(AssertSqlSafe(sql.clone()))
        .fetch_one(pool)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{sql}"))
}

/// `side_effects` has no unique constraint: a second execution of a step is a second row.
/// `claim_log` and `settle_log` are written by a trigger on `x_jobs` in the session that made
/// the change, so `current_setting('application_name')` names the worker process.
async fn install_audit(pool: &PgPool, s: &str) {
    exec(
        pool,
        format!(
            r#"
create table {s}.side_effects (
    run_id uuid not null, job_id uuid not null, step text not null, token text not null,
    saw text, already_completed bool not null, app text not null, attempt int not null,
    at timestamptz not null default clock_timestamp()
);
create table {s}.claim_log (
    job_id uuid not null, claims bigint not null, worker text, app text not null,
    at timestamptz not null default clock_timestamp()
);
create table {s}.settle_log (
    job_id uuid not null, claims bigint not null, worker text, state text not null,
    settler_app text not null, claimer_app text, claimer_worker text, kind text not null,
    lapsed bool not null, at timestamptz not null default clock_timestamp()
);
create function {s}.chaos_audit() returns trigger language plpgsql as $body$
declare
    claimer record;
begin
    if new.state = 'running' and new.claims is distinct from old.claims then
        insert into {s}.claim_log (job_id, claims, worker, app)
        values (new.id, new.claims, new.claimed_by, current_setting('application_name'));
    elsif old.state = 'running' and new.state <> 'running' then
        select c.app, c.worker into claimer from {s}.claim_log c
        where c.job_id = old.id and c.claims = old.claims;
        insert into {s}.settle_log
            (job_id, claims, worker, state, settler_app, claimer_app, claimer_worker, kind, lapsed)
        values (
            old.id, old.claims, old.claimed_by, new.state, current_setting('application_name'),
            claimer.app, claimer.worker,
            case when new.last_error = 'LEASE_LAPSED_FINAL_ATTEMPT' and new.state in ('dead', 'failed')
                      and old.visible_at <= new.updated_at then 'buried'
                 when new.state = 'cancelled' then 'cancelled'
                 else 'settle' end,
            old.visible_at < new.updated_at
        );
    end if;
    return null;
end
$body$;
create trigger chaos_audit after update on {s}.x_jobs
for each row execute function {s}.chaos_audit();
"#
        ),
    )
    .await;
}

/// Keys (name, key) held by more than one live row right now.
async fn live_duplicates(pool: &PgPool, s: &str) -> i64 {
    count(
        pool,
        format!(
            "select count(*) from (select 1 from {s}.x_jobs \
             where state in ('ready', 'delayed', 'running', 'suspended') \
             group by name, coalesce(tenant_id, ''), idempotency_key having count(*) > 1) d"
        ),
    )
    .await
}

async fn unfinished(pool: &PgPool, s: &str) -> i64 {
    count(
        pool,
        format!("select count(*) from {s}.x_jobs where state not in ('done', 'failed', 'dead', 'cancelled')"),
    )
    .await
}

/// Every id any enqueue answered, with the key it was asked under.
#[derive(Default)]
struct Ledger {
    ids: std::collections::BTreeMap<uuid::Uuid, u64>,
    reenqueued: u64,
    deduped: u64,
    inserted_again: u64,
}

impl Ledger {
    fn note(&mut self, n: u64, answer: &Enqueued) {
        if let Some(previous) = self.ids.insert(answer.id, n) {
            assert_eq!(previous, n, "one id answered for two keys");
        }
    }
}

/// What the invariants came to, printed at the end of each run.
#[derive(Debug, Default)]
struct Counts {
    jobs: i64,
    done: i64,
    dead: i64,
    other_final: i64,
    unfinished: i64,
    missing: i64,
    step_executions: i64,
    interrupted_step_reruns: i64,
    completed_step_reruns: i64,
    changed_step_outputs: i64,
    done_without_three_steps: i64,
    claims: i64,
    claim_ordinals_reused: i64,
    settles: i64,
    lapsed_settles_by_holder: i64,
    buried: i64,
    foreign_settles: i64,
    attempts_max: i64,
}

/// Reads every count the invariants need, and checks them.
async fn check_invariants(pool: &PgPool, s: &str, ledger: &Ledger, what: &str) -> Counts {
    let mut c = Counts {
        jobs: count(pool, format!("select count(*) from {s}.x_jobs")).await,
        done: count(
            pool,
            format!("select count(*) from {s}.x_jobs where state = 'done'"),
        )
        .await,
        dead: count(
            pool,
            format!("select count(*) from {s}.x_jobs where state = 'dead'"),
        )
        .await,
        other_final: count(
            pool,
            format!("select count(*) from {s}.x_jobs where state in ('failed', 'cancelled')"),
        )
        .await,
        unfinished: unfinished(pool, s).await,
        ..Counts::default()
    };
    let ids: Vec<uuid::Uuid> = ledger.ids.keys().copied().collect();
    c.missing = sqlx::query_scalar::<_, i64>(AssertSqlSafe(format!(
        "select count(*) from unnest($1::uuid[]) i(id) where not exists (select 1 from {s}.x_jobs j where j.id = i.id)"
    )))
    .bind(&ids)
    .fetch_one(pool)
    .await
    .expect("missing ids");
    c.step_executions = count(
        pool,
        format!("select count(*) from {s}.side_effects where step like 's_'"),
    )
    .await;
    c.interrupted_step_reruns = count(
        pool,
        format!(
            "select coalesce(sum(n - 1), 0)::bigint from (select count(*) n from {s}.side_effects \
             where step like 's_' group by run_id, step) r"
        ),
    )
    .await;
    c.completed_step_reruns = count(
        pool,
        format!("select count(*) from {s}.side_effects where already_completed"),
    )
    .await;
    // A later step saw the earlier step's output; the stored output must still be that one.
    c.changed_step_outputs = count(
        pool,
        format!(
            "select count(*) from {s}.side_effects e \
             join {s}.x_job_steps p on p.run_id = e.run_id \
              and p.name = case e.step when 's2' then 's1' when 's3' then 's2' end \
             where e.step in ('s2', 's3') and (p.output #>> '{{}}') is distinct from e.saw"
        ),
    )
    .await;
    c.done_without_three_steps = count(
        pool,
        format!(
            "select count(*) from {s}.x_jobs j where j.state = 'done' and j.name = 'chaos_steps' and \
             (select count(*) from {s}.x_job_steps t where t.run_id = j.run_id and t.status = 'completed') <> 3"
        ),
    )
    .await;
    c.claims = count(pool, format!("select count(*) from {s}.claim_log")).await;
    c.claim_ordinals_reused = count(
        pool,
        format!(
            "select count(*) from (select 1 from {s}.claim_log group by job_id, claims having count(*) > 1) d"
        ),
    )
    .await;
    c.settles = count(
        pool,
        format!("select count(*) from {s}.settle_log where kind = 'settle'"),
    )
    .await;
    c.lapsed_settles_by_holder = count(
        pool,
        format!("select count(*) from {s}.settle_log where kind = 'settle' and lapsed"),
    )
    .await;
    c.buried = count(
        pool,
        format!("select count(*) from {s}.settle_log where kind = 'buried'"),
    )
    .await;
    c.foreign_settles = count(
        pool,
        format!(
            "select count(*) from {s}.settle_log where kind = 'settle' and \
             (claimer_app is distinct from settler_app or claimer_worker is distinct from worker)"
        ),
    )
    .await;
    c.attempts_max = count(
        pool,
        format!("select coalesce(max(attempt), 0)::bigint from {s}.x_jobs"),
    )
    .await;
    println!("{what}: {c:#?}");

    assert_eq!(c.unfinished, 0, "{what}: every job reaches a final state");
    assert_eq!(c.missing, 0, "{what}: no enqueued job is lost");
    assert_eq!(
        c.jobs,
        ledger.ids.len() as i64,
        "{what}: exactly the jobs enqueued"
    );
    assert_eq!(
        c.completed_step_reruns, 0,
        "{what}: a step closure ran while its step was already completed"
    );
    assert_eq!(
        c.changed_step_outputs, 0,
        "{what}: a completed step's output changed after a later step read it"
    );
    assert_eq!(
        c.done_without_three_steps, 0,
        "{what}: a done run lacks a step"
    );
    assert_eq!(
        c.claim_ordinals_reused, 0,
        "{what}: one claim ordinal handed out twice"
    );
    assert_eq!(
        c.foreign_settles, 0,
        "{what}: a settle landed from a process that did not hold the claim"
    );
    assert_eq!(
        live_duplicates(pool, s).await,
        0,
        "{what}: one live row per key"
    );
    c
}

/// Terminates every backend of `app`: answers how many.
async fn terminate_backends(pool: &PgPool, app: &str) -> i64 {
    sqlx::query_scalar(
        "select count(*) from (select pg_terminate_backend(pid) from pg_stat_activity \
         where application_name = $1) t",
    )
    .bind(app)
    .fetch_one(pool)
    .await
    .expect("terminate backends")
}

async fn enqueue_all(jobs: &Jobs, ledger: &mut Ledger, n: u64) {
    let mut start = 0;
    while start < n {
        let end = (start + 500).min(n);
        let answers = jobs
            .enqueue_many::<ChaosSteps, _>((start..end).map(|n| Chaos { n }))
            .await
            .expect("enqueue the load");
        for (n, answer) in (start..end).zip(&answers) {
            assert!(!answer.deduped, "fresh keys");
            ledger.note(n, answer);
        }
        start = end;
    }
}

/// Enqueues a few keys again: each answer is the live row holding the key, or a new row when
/// the key's job already finished.
async fn reenqueue_some(
    jobs: &Jobs,
    pool: &PgPool,
    s: &str,
    ledger: &mut Ledger,
    rng: &mut Rng,
    n: u64,
) {
    let keys: Vec<u64> = (0..8).map(|_| rng.below(n)).collect();
    // Concurrently: the same key from several tasks at once must still land one live row.
    let answers = futures_join(keys.iter().flat_map(|&k| {
        [k, k].map(|k| {
            let jobs = jobs.clone();
            async move { (k, jobs.enqueue::<ChaosSteps>(Chaos { n: k }).await) }
        })
    }))
    .await;
    for (k, answer) in answers {
        // The server may be cut at any moment: a failed enqueue inserted nothing.
        let Ok(answer) = answer else { continue };
        ledger.reenqueued += 1;
        if answer.deduped {
            ledger.deduped += 1;
        } else if !ledger.ids.contains_key(&answer.id) {
            ledger.inserted_again += 1;
        }
        ledger.note(k, &answer);
        let key: Option<String> = sqlx::query_scalar(AssertSqlSafe(format!(
            "select idempotency_key from {s}.x_jobs where id = $1"
        )))
        .bind(answer.id)
        .fetch_optional(pool)
        .await
        .unwrap_or(None);
        if let Some(key) = key {
            assert_eq!(
                key,
                format!("chaos:{k}"),
                "an enqueue answered another key's job"
            );
        }
    }
}

/// Joins futures without a `futures` dependency: one task each.
async fn futures_join<F, T>(futures: impl IntoIterator<Item = F>) -> Vec<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for handle in handles {
        out.push(handle.await.expect("task"));
    }
    out
}

async fn jobs_on(pool: &PgPool, schema: &str) -> Jobs {
    Jobs::new(PostgresDriver::new(pool.clone(), schema).expect("schema"))
}

// ---------------------------------------------------------------------------------------------
// 1. Kills and cut connections under load.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_kills_and_cut_connections_lose_nothing_and_rerun_no_completed_step() {
    let started = Instant::now();
    let n: u64 = std::env::var("CHAOS_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CHAOS_JOBS);
    let (pool, s) = pg::schema("chaos_kills").await;
    install_audit(&pool, &s).await;
    let jobs = jobs_on(&pool, &s).await;
    let mut ledger = Ledger::default();
    enqueue_all(&jobs, &mut ledger, n).await;

    let mut rng = Rng::seeded();
    let mut fleet = Fleet::new(
        pg::database_url(),
        &s,
        &[
            ("VISIBILITY_MS", "1500"),
            ("CONCURRENCY", "8"),
            ("STEP_MS", "2"),
        ],
    );
    let mut workers: Vec<Worker> = (0..CHAOS_WORKERS).map(|_| fleet.spawn()).collect();
    let (mut kills, mut cuts, mut cut_backends, mut dup_samples) = (0u64, 0u64, 0i64, 0u64);
    let deadline = Instant::now() + CHAOS_BOUND;
    let mut last_chaos = Instant::now();
    loop {
        let left = unfinished(&pool, &s).await;
        assert_eq!(
            live_duplicates(&pool, &s).await,
            0,
            "one live row per key, always"
        );
        dup_samples += 1;
        if left == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "chaos run did not finish within {CHAOS_BOUND:?}: {left} jobs unfinished"
        );
        // Keep breaking things while at least a twentieth of the load is left: the tail then runs
        // on a fleet that recovers.
        if left * 20 >= n as i64 && last_chaos.elapsed() >= Duration::from_millis(250) {
            last_chaos = Instant::now();
            let victim = rng.below(workers.len() as u64) as usize;
            if rng.below(2) == 0 {
                let dead = workers.swap_remove(victim);
                dead.sigkill();
                kills += 1;
                workers.push(fleet.spawn());
            } else {
                cut_backends += terminate_backends(&pool, &workers[victim].app).await;
                cuts += 1;
            }
            reenqueue_some(&jobs, &pool, &s, &mut ledger, &mut rng, n).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for worker in workers {
        worker.sigkill();
    }
    let counts = check_invariants(&pool, &s, &ledger, "chaos").await;
    assert_eq!(
        counts.dead + counts.other_final,
        0,
        "50 attempts outlast the chaos"
    );
    println!(
        "chaos: {n} jobs + {} re-enqueues ({} deduped, {} inserted after the first finished); \
         {kills} SIGKILLs, {cuts} connection cuts ({cut_backends} backends terminated), \
         {dup_samples} live-key samples; {:.1} s",
        ledger.reenqueued,
        ledger.deduped,
        ledger.inserted_again,
        started.elapsed().as_secs_f64()
    );
    assert!(kills > 0 && cuts > 0, "the chaos broke something");
}

// ---------------------------------------------------------------------------------------------
// 2. A server restart under load.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_under_load_loses_nothing() {
    let started = Instant::now();
    // A restart needs a server of the test's own: no private cluster is a failure that names
    // the fix, never a skip.
    let cluster = pg::private_cluster().unwrap_or_else(|why| panic!("{why}"));
    let url = cluster.url();
    let (pool, s) = pg::schema_on(&url, "chaos_restart").await;
    install_audit(&pool, &s).await;
    let jobs = jobs_on(&pool, &s).await;
    let mut ledger = Ledger::default();
    let n = 600;
    enqueue_all(&jobs, &mut ledger, n).await;

    let mut fleet = Fleet::new(&url, &s, &[("VISIBILITY_MS", "1500"), ("STEP_MS", "2")]);
    let workers: Vec<Worker> = (0..3).map(|_| fleet.spawn()).collect();
    let bound = Instant::now() + Duration::from_secs(90);
    // Restart once a third of the load is done, so the restart lands in the middle of it.
    loop {
        let done = count(
            &pool,
            format!("select count(*) from {s}.x_jobs where state = 'done'"),
        )
        .await;
        if done * 3 >= n as i64 {
            break;
        }
        assert!(Instant::now() < bound, "the load did not get going");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let at_restart = unfinished(&pool, &s).await;
    let restart = Instant::now();
    cluster.stop().expect("stop the server");
    cluster.start().expect("start the server again");
    let outage = restart.elapsed();
    // The test's own pool reconnects as the workers' do.
    loop {
        let left = sqlx::query_scalar::<_, i64>(AssertSqlSafe(format!(
            "select count(*) from {s}.x_jobs where state not in ('done', 'failed', 'dead', 'cancelled')"
        )))
        .fetch_one(&pool)
        .await;
        if let Ok(0) = left {
            break;
        }
        assert!(
            Instant::now() < bound,
            "the workers did not finish the load after the restart"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = restart.elapsed();
    for worker in workers {
        worker.sigkill();
    }
    let counts = check_invariants(&pool, &s, &ledger, "restart").await;
    assert_eq!(counts.done, n as i64);
    println!(
        "restart: {n} jobs, {at_restart} unfinished at the restart, server down and up in {} ms, \
         load finished {:.1} s after it; {:.1} s in all",
        outage.as_millis(),
        after.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------------
// 3. SIGTERM under load.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_running_jobs_finish_and_hands_the_rest_back_uncounted() {
    let started = Instant::now();
    let (pool, s) = pg::schema("chaos_sigterm").await;
    install_audit(&pool, &s).await;
    let jobs = jobs_on(&pool, &s).await;
    // Six jobs finish well within the 3 s deadline, four outlast it.
    let (short, long) = (6u64, 4u64);
    let mut ids = Vec::new();
    for n in 0..short + long {
        let ms = if n < short { 200 } else { 6_000 };
        ids.push(
            DrainWork::enqueue(&jobs, Drain { n, ms })
                .await
                .expect("enqueue")
                .id,
        );
    }
    let mut fleet = Fleet::new(
        pg::database_url(),
        &s,
        &[
            ("CONCURRENCY", "16"),
            ("SHUTDOWN_MS", "3000"),
            ("VISIBILITY_MS", "3000"),
        ],
    );
    let mut first = fleet.spawn();
    let bound = Instant::now() + Duration::from_secs(30);
    let starts = format!("select count(*) from {s}.side_effects where step = 'start'");
    while count(&pool, starts.clone()).await < (short + long) as i64 {
        assert!(Instant::now() < bound, "every job started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let term = Instant::now();
    first.sigterm();
    let mut line = String::new();
    first.stdout.read_line(&mut line).expect("the drain notice");
    assert_eq!(line.trim(), "draining");
    // A job enqueued once the worker drains is not its own (a claim already in flight when the
    // SIGTERM landed may still take it: that is reported, not refused).
    let late = DrainWork::enqueue(&jobs, Drain { n: 100, ms: 10 })
        .await
        .expect("enqueue")
        .id;
    line.clear();
    first.stdout.read_line(&mut line).expect("the drain report");
    let status = first.child.wait().expect("the worker exits");
    let drained_in = term.elapsed();
    assert!(status.success(), "a drained worker exits 0: {status}");
    let late_taken = count(
        &pool,
        format!(
            "select count(*) from {s}.claim_log where job_id = '{late}' and app = '{}'",
            first.app
        ),
    )
    .await;
    assert_eq!(
        line.trim(),
        format!(
            "drained interrupted={long} completed={}",
            short + late_taken as u64
        ),
        "the short jobs finished, the long ones were handed back"
    );
    assert!(
        drained_in < Duration::from_millis(3_000 + 2_500),
        "the drain kept to its deadline: {drained_in:?}"
    );
    let mut handed_back = 0;
    for (n, id) in ids.iter().enumerate() {
        let row = jobs.job(*id).await.expect("read").expect("exists");
        if (n as u64) < short {
            assert_eq!(row.state, JobState::Done, "short job {n}");
            assert_eq!(row.attempt, 1);
        } else {
            assert_eq!(row.state, JobState::Ready, "long job {n} handed back");
            assert_eq!(row.attempt, 0, "the interrupted attempt is not counted");
            assert_eq!(row.last_error_code.as_deref(), Some("X_DRAINING"));
            handed_back += 1;
        }
    }
    assert_eq!(
        count(
            &pool,
            format!("select count(*) from {s}.x_jobs where state = 'running'")
        )
        .await,
        0,
        "nothing left running without an owner"
    );
    let ends_before = count(
        &pool,
        format!("select count(*) from {s}.side_effects where step = 'end'"),
    )
    .await;
    assert_eq!(ends_before, short as i64 + late_taken);

    // The next deploy finishes the handed-back jobs on their first counted attempt.
    let second = fleet.spawn();
    while unfinished(&pool, &s).await > 0 {
        assert!(
            Instant::now() < bound,
            "the second worker finishes the rest"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    second.sigkill();
    for id in &ids[short as usize..] {
        let row = jobs.job(*id).await.expect("read").expect("exists");
        assert_eq!(row.state, JobState::Done);
        assert_eq!(row.attempt, 1, "attempt 1 survives the deploy");
    }
    let mut ledger = Ledger::default();
    for (n, id) in ids.iter().chain([&late]).enumerate() {
        ledger.ids.insert(*id, n as u64);
    }
    check_invariants(&pool, &s, &ledger, "sigterm").await;
    println!(
        "sigterm: {short} finished within the deadline, {handed_back} handed back uncounted, \
         drained in {} ms (a job enqueued during the drain taken by it: {late_taken}); \
         {:.1} s in all",
        drained_in.as_millis(),
        started.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------------
// The audit itself: a settle from a process other than the claim's holder is caught.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settle_audit_catches_a_settle_from_a_process_that_did_not_claim() {
    use jobs::driver::{AckParams, ClaimParams, JobDriver, QueueDemand};
    use jobs::sqlx::postgres::{PgConnectOptions, PgPoolOptions};
    use std::str::FromStr;

    let (pool, s) = pg::schema("chaos_audit").await;
    install_audit(&pool, &s).await;
    let app_pool = |app: &str| {
        let options = PgConnectOptions::from_str(pg::database_url())
            .expect("url")
            .application_name(app);
        PgPoolOptions::new()
            .max_connections(1)
            .connect_lazy_with(options)
    };
    let holder = PostgresDriver::new(app_pool("audit-holder"), &s).expect("schema");
    let intruder = PostgresDriver::new(app_pool("audit-intruder"), &s).expect("schema");
    let jobs = jobs_on(&pool, &s).await;
    ChaosSteps::enqueue(&jobs, Chaos { n: 1 })
        .await
        .expect("enqueue");
    let now = jobs.now();
    let claimed = holder
        .job_claim(&ClaimParams {
            demand: vec![QueueDemand {
                queue: "default".into(),
                limit: 1,
            }],
            worker_id: "w1".into(),
            visibility_timeout: Duration::from_secs(30),
            drop_exhausted: Vec::new(),
            fair_after: String::new(),
            now,
        })
        .await
        .expect("claim")
        .jobs;
    assert_eq!(claimed.len(), 1);
    // The same claim identity, presented from another process: the fence cannot tell, the
    // audit can.
    let landed = intruder
        .job_ack(&AckParams {
            job_id: claimed[0].id,
            by: claimed[0].by.clone(),
            now,
        })
        .await
        .expect("ack");
    assert!(landed);
    let foreign = count(
        &pool,
        format!(
            "select count(*) from {s}.settle_log where kind = 'settle' and claimer_app is distinct from settler_app"
        ),
    )
    .await;
    assert_eq!(foreign, 1, "the audit saw the foreign settle");
}
