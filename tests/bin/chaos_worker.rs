//! A worker process for the chaos tests (`tests/processes/chaos_postgres.rs`,
//! `tests/processes/chaos_sqlite.rs`, `tests/processes/chaos_redis.rs`), on the queue
//! `DATABASE_URL` names: a SQLite file (`sqlite://...`), a Redis server (`redis://...`, its key
//! prefix in the URL), or the Postgres schema named by `JOBS_SCHEMA`.
//!
//! - On Postgres every connection it opens carries `application_name = $CHAOS_APP`, so the
//!   test can find its backends and `pg_terminate_backend` them, and so the audit trigger the
//!   test installs on `x_jobs` can tell which process claimed and which settled each row.
//! - On SQLite it installs the audit's temporary triggers on its writing connection under that
//!   name (`tests/support/chaos/audit_sqlite_session.sql`).
//! - On Redis, which has no triggers and no tables, the side effects and the audit go to the
//!   Postgres schema `JOBS_SCHEMA` on `SIDE_DATABASE_URL`, and the worker runs on its driver
//!   wrapped in the auditing decorator (`audit_driver.rs`), which logs each claim it is handed
//!   and each fenced write that lands.
//!
//! - `chaos_steps`: three durable steps. Each step closure first asks the store whether its step
//!   is already `completed` (it never should be: a completed step is replayed, not re-run), then
//!   records one side-effect row in `<schema>.side_effects` (no unique constraint: a duplicate
//!   is counted, not refused) carrying a fresh token, the token of the step before it, and that
//!   answer. The step's output is its token.
//! - `chaos_parent` invokes five `chaos_child` jobs (two such steps each, keeping the second's
//!   token as their result) between two steps of its own (`p1`, `p2`); `p2` records the
//!   results it resumed with, so the test can check a parent resumed once with every result.
//! - `drain_work`: records `start`, works `ms` milliseconds, records `end`: the SIGTERM test's
//!   load (a short job finishes within the shutdown deadline, a long one is handed back).
//!
//! Environment: `DATABASE_URL`, `JOBS_SCHEMA` (Postgres, and Redis' side schema),
//! `SIDE_DATABASE_URL` (Redis), `CHAOS_APP`, and optionally `VISIBILITY_MS` (default 1500),
//! `CONCURRENCY` (8), `SHUTDOWN_MS` (2000), `STEP_MS` (0: work inside each chaos step, after its
//! side effect, to widen the window a kill can land in).
//!
//! Prints `ready` once the worker loop runs. On SIGTERM it prints `draining` and shuts down
//! gracefully (stops claiming, lets running jobs finish within `SHUTDOWN_MS`, hands the rest back uncounted),
//! prints `drained interrupted=<n> completed=<n> lease_lost=<n>` and exits 0.

mod audit_driver;
mod side_db;

use std::sync::Arc;
use std::time::Duration;

use audit_driver::AuditDriver;
use jobs::driver::{JobDriver, PostgresDriver, RedisDriver, StepListParams, StepStatus};
use jobs::prelude::*;
use side_db::{Arg, SideDb};

/// The SQLite audit's triggers for one connection, for the process named `{app}`.
const SQLITE_AUDIT: &str = include_str!("../support/chaos/audit_sqlite_session.sql");

#[derive(Serialize, Deserialize, JsonSchema)]
struct Chaos {
    n: u64,
}

/// One child of a `chaos_parent`.
#[derive(Serialize, Deserialize, JsonSchema)]
struct Kid {
    n: u64,
    i: u64,
}

/// How many children each `chaos_parent` invokes.
const KIDS: u64 = 5;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Drain {
    n: u64,
    ms: u64,
}

struct Side {
    db: SideDb,
    schema: String,
    app: String,
    step_ms: u64,
    /// Where a step closure asks whether its step is already stored completed.
    steps: Steps,
}

/// Where the step records are read.
enum Steps {
    /// The queue's own `x_job_steps` table, through the side database (Postgres, SQLite).
    Table,
    /// The driver's `step_list` (Redis keeps no tables).
    Driver(Arc<dyn JobDriver>),
}

impl Side {
    /// One execution of a step closure: when it began (its first poll, before anything it
    /// awaits), whether the store already held the step completed when it asked, then the side
    /// effect itself. Answers the token (the step's output).
    async fn execute(&self, run: &Run, step: &str, saw: Option<&str>) -> Result<String, JobError> {
        let began_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        let already = self.already_completed(run, step).await?;
        let token = uuid::Uuid::new_v4().to_string();
        let insert = format!(
            "insert into {}.side_effects (run_id, job_id, step, token, saw, already_completed, app, attempt, began_us) \
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            self.schema
        );
        let args = [
            Arg::Uuid(run.run_id()),
            Arg::Uuid(run.job_id()),
            Arg::Text(Some(step)),
            Arg::Text(Some(&token)),
            Arg::Text(saw),
            Arg::Bool(already),
            Arg::Text(Some(&self.app)),
            Arg::Int(run.attempt() as i32),
            Arg::BigInt(began_us),
        ];
        self.db.execute(insert, &args).await?;
        if self.step_ms > 0 {
            tokio::time::sleep(Duration::from_millis(self.step_ms)).await;
        }
        Ok(token)
    }

    /// Whether the store holds `step` of this run completed.
    async fn already_completed(&self, run: &Run, step: &str) -> Result<bool, JobError> {
        match &self.steps {
            Steps::Table => {
                let completed = format!(
                    "select exists (select 1 from {}.x_job_steps where run_id = $1 and name = $2 and status = 'completed')",
                    self.schema
                );
                self.db
                    .fetch_bool(completed, &[Arg::Uuid(run.run_id()), Arg::Text(Some(step))])
                    .await
            }
            Steps::Driver(driver) => {
                let stored = driver
                    .step_list(&StepListParams {
                        run_id: run.run_id(),
                    })
                    .await?;
                Ok(stored
                    .iter()
                    .any(|s| s.name == step && s.status == StepStatus::Completed))
            }
        }
    }

    async fn mark(&self, run: &Run, step: &str) -> Result<(), JobError> {
        let insert = format!(
            "insert into {}.side_effects (run_id, job_id, step, token, already_completed, app, attempt) \
             values ($1, $2, $3, '', false, $4, $5)",
            self.schema
        );
        let args = [
            Arg::Uuid(run.run_id()),
            Arg::Uuid(run.job_id()),
            Arg::Text(Some(step)),
            Arg::Text(Some(&self.app)),
            Arg::Int(run.attempt() as i32),
        ];
        self.db.execute(insert, &args).await?;
        Ok(())
    }
}

#[job(
    key = "chaos:{n}",
    tenant = none,
    retry(attempts = 50, backoff = fixed, delay = "100ms", jitter = none)
)]
async fn chaos_steps(run: Run, _input: Chaos) -> Result<(), JobError> {
    let side = run.context::<Side>()?;
    let first: String = run.step("s1", side.execute(&run, "s1", None)).await?;
    let second: String = run
        .step("s2", side.execute(&run, "s2", Some(&first)))
        .await?;
    let _third: String = run
        .step("s3", side.execute(&run, "s3", Some(&second)))
        .await?;
    Ok(())
}

/// A child: two durable steps recording their side effects as `chaos_steps`' do (`s1`, `s2`);
/// its result is its second step's token.
#[job(
    key = "chaos-child:{n}:{i}",
    tenant = none,
    keep_result,
    retry(attempts = 50, backoff = fixed, delay = "100ms", jitter = none)
)]
async fn chaos_child(run: Run, _input: Kid) -> Result<String, JobError> {
    let side = run.context::<Side>()?;
    let first: String = run.step("s1", side.execute(&run, "s1", None)).await?;
    let second: String = run
        .step("s2", side.execute(&run, "s2", Some(&first)))
        .await?;
    Ok(second)
}

/// A parent: a step (`p1`), then [`KIDS`] children invoked and awaited, then a step (`p2`)
/// recording what it resumed with: the children's results joined by commas.
#[job(
    key = "chaos-parent:{n}",
    tenant = none,
    retry(attempts = 50, backoff = fixed, delay = "100ms", jitter = none)
)]
async fn chaos_parent(run: Run, input: Chaos) -> Result<(), JobError> {
    let side = run.context::<Side>()?;
    run.step("p1", side.execute(&run, "p1", None)).await?;
    let kids = (0..KIDS).map(|i| Kid { n: input.n, i });
    let results = run.invoke_all(ChaosChild, kids).await?;
    let results = results.into_iter().collect::<Result<Vec<String>, _>>()?;
    let joined = results.join(",");
    run.step("p2", side.execute(&run, "p2", Some(&joined)))
        .await?;
    Ok(())
}

#[job(
    key = "drain:{n}",
    tenant = none,
    retry(attempts = 5, backoff = fixed, delay = "100ms", jitter = none)
)]
async fn drain_work(run: Run, input: Drain) -> Result<(), JobError> {
    let side = run.context::<Side>()?;
    side.mark(&run, "start").await?;
    tokio::time::sleep(Duration::from_millis(input.ms)).await;
    side.mark(&run, "end").await?;
    Ok(())
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let url = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let schema = std::env::var("JOBS_SCHEMA").expect("JOBS_SCHEMA");
    let app = std::env::var("CHAOS_APP").expect("CHAOS_APP");
    let visibility = Duration::from_millis(env_u64("VISIBILITY_MS", 1500));
    let step_ms = env_u64("STEP_MS", 0);
    let (jobs, side) = if side_db::is_sqlite(&url) {
        let audit = SQLITE_AUDIT.replace("{app}", &app);
        let (jobs, db) = side_db::open_sqlite(&url, Some(audit)).await?;
        let schema = "main".to_string();
        let side = Side {
            db,
            schema,
            app,
            step_ms,
            steps: Steps::Table,
        };
        (jobs, side)
    } else if side_db::is_redis(&url) {
        let side_url = std::env::var("SIDE_DATABASE_URL").expect("SIDE_DATABASE_URL");
        let pool = side_db::postgres_pool(&side_url, &app)?;
        let driver: Arc<dyn JobDriver> = Arc::new(RedisDriver::connect(&url).await?);
        let audited = AuditDriver::new(driver.clone(), pool.clone(), &schema, &app);
        let side = Side {
            db: SideDb::Postgres(pool),
            schema,
            app,
            step_ms,
            steps: Steps::Driver(driver),
        };
        (Jobs::new(audited), side)
    } else {
        let pool = side_db::postgres_pool(&url, &app)?;
        let driver = PostgresDriver::new(pool.clone(), &schema)?;
        let side = Side {
            db: SideDb::Postgres(pool),
            schema,
            app,
            step_ms,
            steps: Steps::Table,
        };
        (Jobs::new(driver), side)
    };
    let worker = jobs
        .worker()
        .concurrency(u32::try_from(env_u64("CONCURRENCY", 8)).unwrap_or(8))
        .visibility_timeout(visibility)
        .heartbeat_interval(visibility / 3)
        .poll_interval(Duration::from_millis(20))
        .idle_poll_max(Duration::from_millis(100))
        .shutdown_deadline(Duration::from_millis(env_u64("SHUTDOWN_MS", 2000)))
        .context(Arc::new(side))
        .build()?;
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| JobError::retryable(format!("cannot listen for SIGTERM: {e}")))?;
    let running = worker.start();
    println!("ready");
    terminate.recv().await;
    println!("draining");
    let report = running.shutdown().await;
    let stats = worker.stats();
    println!(
        "drained interrupted={} completed={} lease_lost={}",
        report.interrupted, stats.completed, stats.lease_lost
    );
    Ok(())
}
