//! The scheduler on a real Postgres: the atomic fire, the lease-row leader, the idle cost of a
//! leading scheduler, and two scheduler processes, one SIGKILLed while leading.

use crate::support;

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jobs::clock::{Clock, TestClock, Timestamp};
use jobs::driver::scheduler_store::TaskFireParams;
use jobs::driver::{JobDriver, PostgresDriver};
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};
use jobs::{CatchUp, Registry, Scheduler, Task, TaskDescriptor};
use support::pg;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Slot {
    at: String,
}

#[job(key = "tick:{at}", tenant = none)]
async fn pg_tick(_run: Run, _input: Slot) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "audit:{at}", tenant = none, queue = "audit")]
async fn pg_audit(_run: Run, _input: Slot) -> Result<(), JobError> {
    Ok(())
}

macro_rules! task {
    ($ty:ident, $name:literal, $cron:literal) => {
        struct $ty;
        impl Task for $ty {
            const DESCRIPTOR: TaskDescriptor = TaskDescriptor {
                name: $name,
                cron: $cron,
                tz: "Europe/Paris",
                catch_up: CatchUp::Skip,
                max_catch_up: 10,
            };
            fn entries(at: &Occurrence) -> Vec<Entry> {
                let slot = || Slot {
                    at: at.local().to_rfc3339(),
                };
                vec![Entry::of::<PgTick>(slot()), Entry::of::<PgAudit>(slot())]
            }
        }
    };
}

task!(Every5, "every5", "*/5 * * * *");
task!(Hourly, "hourly", "0 * * * *");
task!(Daily, "daily", "30 2 * * *");
task!(Weekly, "weekly", "0 9 * * 1");
task!(Monthly, "monthly", "0 0 1 * *");

fn at(text: &str) -> Timestamp {
    text.parse().expect("an RFC 3339 instant")
}

async fn count(pool: &sqlx::PgPool, schema: &str, table: &str) -> i64 {
    sqlx::query_scalar(AssertSqlSafe(format!(
        "select count(*) from {schema}.{table}"
    )))
    .fetch_one(pool)
    .await
    .expect("count")
}

async fn world(
    test: &str,
    start: &str,
) -> (sqlx::PgPool, String, Arc<PostgresDriver>, TestClock, Jobs) {
    let (pool, schema) = pg::schema(test).await;
    let driver = Arc::new(PostgresDriver::new(pool.clone(), &schema).expect("schema"));
    let clock = TestClock::at(at(start));
    let jobs = Jobs::with_clock(driver.clone(), Arc::new(clock.clone()));
    (pool, schema, driver, clock, jobs)
}

fn scheduler(jobs: &Jobs, id: &str) -> Scheduler {
    let mut registry = Registry::new();
    registry
        .register_task::<Every5>()
        .and_then(|r| r.register_task::<Hourly>())
        .and_then(|r| r.register_task::<Daily>())
        .and_then(|r| r.register_task::<Weekly>())
        .and_then(|r| r.register_task::<Monthly>())
        .expect("registers");
    jobs.scheduler()
        .registry(registry)
        .id(id)
        .build()
        .expect("builds")
}

fn fire(
    task: &str,
    expected: Option<Timestamp>,
    to: Timestamp,
    keys: &[&str],
    now: Timestamp,
) -> TaskFireParams {
    let jobs = keys
        .iter()
        .map(|key| jobs::driver::EnqueueRequest {
            id: uuid::Uuid::now_v7(),
            run_id: uuid::Uuid::now_v7(),
            name: "pg_tick".into(),
            queue: "default".into(),
            input: serde_json::json!({ "at": key }),
            idempotency_key: key.to_string(),
            tenant_id: None,
            max_attempts: 3,
            run_at: now,
            priority: 0,
            on_conflict: Default::default(),
            traceparent: None,
            actor: None,
            unique_for: None,
            dependencies: None,
            now,
        })
        .collect();
    TaskFireParams {
        task: task.into(),
        expected,
        watermark: to,
        occurrence: Some(to),
        jobs,
        now,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_fire_moves_the_watermark_and_inserts_the_jobs_in_one_statement() {
    let (pool, schema, driver, clock, _jobs) =
        world("sched_atomic_fire", "2030-01-01T00:00:00Z").await;
    let store = driver
        .scheduler_store()
        .expect("postgres has a scheduler store");
    let now = clock.now();
    let t1 = at("2030-01-01T00:05:00Z");
    let first = store
        .task_fire(&fire("t", None, t1, &["k1", "k2"], now))
        .await
        .unwrap();
    assert!(first.fired);
    assert_eq!(first.jobs.len(), 2);
    assert!(first.jobs.iter().all(|j| !j.deduped));
    assert_eq!(count(&pool, &schema, "x_jobs").await, 2);
    // A second fire from the same expected watermark inserts nothing.
    let again = store
        .task_fire(&fire("t", None, t1, &["k3"], now))
        .await
        .unwrap();
    assert!(!again.fired && again.jobs.is_empty());
    assert_eq!(count(&pool, &schema, "x_jobs").await, 2);
    // From the right watermark it lands; a live key answers the live row, deduped.
    let t2 = at("2030-01-01T00:10:00Z");
    let next = store
        .task_fire(&fire("t", Some(t1), t2, &["k1", "k4", "k4"], now))
        .await
        .unwrap();
    assert!(next.fired);
    assert_eq!(next.jobs[0].id, first.jobs[0].id);
    assert!(next.jobs[0].deduped && !next.jobs[1].deduped && next.jobs[2].deduped);
    assert_eq!(
        next.jobs[2].id, next.jobs[1].id,
        "a duplicate inside one fire answers its twin"
    );
    assert_eq!(count(&pool, &schema, "x_jobs").await, 3);
    // Two fires racing from one watermark: exactly one lands.
    let t3 = at("2030-01-01T00:15:00Z");
    let (fire_a, fire_b) = (
        fire("t", Some(t2), t3, &["a"], now),
        fire("t", Some(t2), t3, &["b"], now),
    );
    let (a, b) = tokio::join!(store.task_fire(&fire_a), store.task_fire(&fire_b));
    assert_eq!(
        [a.unwrap().fired, b.unwrap().fired]
            .iter()
            .filter(|f| **f)
            .count(),
        1
    );
    assert_eq!(count(&pool, &schema, "x_jobs").await, 4);
    let fires = store
        .task_fires(&jobs::driver::scheduler_store::TaskFiresParams { now })
        .await
        .unwrap();
    assert_eq!(fires.len(), 1);
    assert_eq!(fires[0].occurrence, t3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_fires_and_a_stopped_leader_hands_over_at_once() {
    let (pool, schema, _driver, clock, jobs) = world("sched_leader", "2030-01-01T00:00:00Z").await;
    let a = scheduler(&jobs, "a");
    let b = scheduler(&jobs, "b");
    assert!(a.tick().await.unwrap().leading);
    assert!(!b.tick().await.unwrap().leading);
    let mut fired = 0;
    while clock.now() < at("2030-01-01T00:10:30Z") {
        clock.advance(Duration::from_secs(1));
        fired += a.tick().await.unwrap().fired.len();
        let standby = b.tick().await.unwrap();
        assert!(!standby.leading && standby.fired.is_empty());
    }
    assert_eq!(fired, 2);
    assert_eq!(count(&pool, &schema, "x_jobs").await, 4);
    a.start().shutdown().await.unwrap();
    assert_eq!(
        count(&pool, &schema, "x_scheduler_leader").await,
        0,
        "the lease row is deleted"
    );
    clock.advance(Duration::from_secs(10));
    assert!(
        b.tick().await.unwrap().leading,
        "the standby promotes at its next ask"
    );
    // A stalled leader loses the lease once its TTL passes.
    clock.advance(Duration::from_secs(5));
    assert!(!a.tick().await.unwrap().leading);
    clock.advance(Duration::from_secs(31));
    assert!(
        a.tick().await.unwrap().leading,
        "b stalled past its TTL: a takes over"
    );
    assert!(!b.tick().await.unwrap().leading);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_leader_issues_six_statements_a_minute_whatever_the_number_of_tasks() {
    let (_pool, _schema, _driver, clock, jobs) =
        world("sched_idle_cost", "2030-01-01T00:00:30Z").await;
    let s = scheduler(&jobs, "idle");
    s.tick().await.unwrap(); // leads, reads the watermarks, arms five tasks
    let before = s.stats();
    for _ in 0..60 {
        clock.advance(Duration::from_secs(1));
        assert!(s.tick().await.unwrap().fired.is_empty());
    }
    let after = s.stats();
    let statements = after.store_calls - before.store_calls;
    println!("idle leader with 5 tasks: {statements} statements in one minute");
    assert!(statements <= 6, "{statements} statements per idle minute");
    assert_eq!(after.cron_evaluations, before.cron_evaluations);
}

// ---------------------------------------------------------------------------------------------
// Two processes.

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn start(schema: &str, id: &str, base_wall_ms: i64) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scheduler-process"))
        .env("DATABASE_URL", pg::database_url())
        .env("JOBS_SCHEMA", schema)
        .env("SCHEDULER_ID", id)
        .env("BASE_WALL_MS", base_wall_ms.to_string())
        .env(
            "BASE_SIM_MS",
            at("2030-01-01T00:00:00Z").timestamp_millis().to_string(),
        )
        .env("SCALE", "60")
        // 90 simulated seconds (1.5 s of wall time at 60x): the standby takes over after one or
        // two missed occurrences, which its run-all catch-up fires.
        .env("LEASE_TTL_MS", "90000")
        .stdout(Stdio::piped())
        .spawn()
        .expect("the scheduler process starts");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("piped stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
        .expect("the scheduler process reports");
    assert_eq!(line.trim(), "ready");
    child
}

async fn holder(pool: &sqlx::PgPool, schema: &str) -> Option<String> {
    sqlx::query_scalar(AssertSqlSafe(format!(
        "select holder from {schema}.x_scheduler_leader"
    )))
    .fetch_optional(pool)
    .await
    .expect("read the lease")
}

async fn wait_until<F, Fut>(bound: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + bound;
    while !condition().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_process_is_replaced_and_every_occurrence_fires_once() {
    let (pool, schema) = pg::schema("sched_two_processes").await;
    let base = wall_ms();
    let mut a = start(&schema, "a", base);
    wait_until(Duration::from_secs(30), "a to lead", || async {
        holder(&pool, &schema).await.as_deref() == Some("a")
    })
    .await;
    let mut b = start(&schema, "b", base);
    wait_until(Duration::from_secs(30), "three occurrences", || async {
        count(&pool, &schema, "x_jobs").await >= 3
    })
    .await;
    assert_eq!(
        holder(&pool, &schema).await.as_deref(),
        Some("a"),
        "b stood by"
    );
    // SIGKILL the leader: no resign, the lease row stays until its TTL passes.
    a.kill().expect("SIGKILL a");
    let killed = Instant::now();
    a.wait().expect("reap a");
    let fired_by_a = count(&pool, &schema, "x_jobs").await;
    wait_until(Duration::from_secs(30), "b to take over", || async {
        holder(&pool, &schema).await.as_deref() == Some("b")
    })
    .await;
    let handover = killed.elapsed();
    wait_until(Duration::from_secs(30), "b to fire three more", || async {
        count(&pool, &schema, "x_jobs").await >= fired_by_a + 3
    })
    .await;
    b.kill().expect("stop b");
    b.wait().expect("reap b");

    let keys: Vec<String> = sqlx::query_scalar(AssertSqlSafe(format!(
        "select idempotency_key from {schema}.x_jobs order by idempotency_key"
    )))
    .fetch_all(&pool)
    .await
    .expect("keys");
    // `every-minute:<occurrence ms>:minute:<occurrence>`: one job per occurrence, no gap.
    let mut minutes: Vec<i64> = keys
        .iter()
        .map(|k| {
            k.split(':')
                .nth(1)
                .and_then(|ms| ms.parse().ok())
                .expect("a scoped key")
        })
        .collect();
    minutes.sort();
    let total = minutes.len();
    minutes.dedup();
    assert_eq!(minutes.len(), total, "an occurrence fired twice: {keys:?}");
    for pair in minutes.windows(2) {
        assert_eq!(pair[1] - pair[0], 60_000, "a missed occurrence: {keys:?}");
    }
    let last: Timestamp = sqlx::query_scalar(AssertSqlSafe(format!(
        "select last_occurrence from {schema}.x_scheduler_state where task = 'every-minute'"
    )))
    .fetch_one(&pool)
    .await
    .expect("the fire record");
    assert_eq!(last.timestamp_millis(), *minutes.last().unwrap());
    println!(
        "two processes: {total} occurrences, each once ({fired_by_a} before the kill); \
         handover {} ms wall (lease TTL 90 s simulated = 1.5 s wall at 60x)",
        handover.as_millis()
    );
}
