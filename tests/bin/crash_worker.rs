//! A worker process for the process tests, on the queue `DATABASE_URL` names: a SQLite file
//! (`sqlite://...`), a Redis server (`redis://...`, its side effects in the Postgres schema
//! `JOBS_SCHEMA` on `SIDE_DATABASE_URL`), or the Postgres schema named by `JOBS_SCHEMA`.
//!
//! - `two_steps` records each step closure's execution in `<schema>.side_effects`; with
//!   `BLOCK_SECOND_STEP=1` the second step never finishes, so the crash test can SIGKILL the
//!   process in the middle of it.
//! - `capped_work` (`concurrency = 2`, fleet-wide; Postgres and Redis) records when each run starts
//!   and ends in `<schema>.runs`, so the concurrency test can check that no more than two ever
//!   overlap.
//!
//! - `nap` records `nap-start`, waits for the test's gate (a row in `<schema>.nap_gate`), parks
//!   for 2 s with `run.sleep` and records `nap-resumed`: the on-time test kills the process that
//!   parked it and times its resumption on another. `POLL_MS` sets the worker's poll interval
//!   and idle ceiling (default 50 ms and 200 ms).
//!
//! With `ENQUEUE_BATCH=<n>` it runs no worker: it prints `ready`, enqueues `n` `two_steps` jobs
//! (keys from `BATCH_FIRST`, default 0) in one `enqueue_many`, prints `enqueued` and exits, so
//! a test can SIGKILL it in the middle of the batch's write.

mod side_db;

use std::time::Duration;

use jobs::driver::{PostgresDriver, RedisDriver};
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};
use jobs::Registry;
use side_db::{Arg, SideDb};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Work {
    n: u64,
}

#[derive(Clone)]
struct Side {
    db: SideDb,
    schema: String,
    block: bool,
}

impl Side {
    async fn record(&self, run: &Run, step: &str) -> Result<(), JobError> {
        let sql = format!(
            "insert into {}.side_effects (run_id, step, pid) values ($1, $2, $3)",
            self.schema
        );
        let args = [
            Arg::Uuid(run.run_id()),
            Arg::Text(Some(step)),
            Arg::Int(std::process::id() as i32),
        ];
        self.db.execute(sql, &args).await
    }

    /// The Postgres pool (the queue's own, or Redis' side database): `capped_work` runs only
    /// there.
    fn pool(&self) -> Result<&sqlx::PgPool, JobError> {
        match &self.db {
            SideDb::Postgres(pool) => Ok(pool),
            SideDb::Sqlite(_) => Err(JobError::terminal("capped_work runs on Postgres only")),
        }
    }
}

#[job(key = "two-steps:{n}", tenant = none)]
async fn two_steps(run: Run, _input: Work) -> Result<(), JobError> {
    let side = run.context::<Side>()?;
    run.step("first", async {
        side.record(&run, "first").await?;
        Ok::<_, JobError>(())
    })
    .await?;
    run.step("second", async {
        side.record(&run, "second-start").await?;
        if side.block {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        side.record(&run, "second-done").await?;
        Ok::<_, JobError>(())
    })
    .await?;
    Ok(())
}

#[job(key = "nap:{n}", tenant = none)]
async fn nap(run: Run, _input: Work) -> Result<(), JobError> {
    let side = run.context::<Side>()?;
    run.step("start", async {
        side.record(&run, "nap-start").await?;
        let gate = format!("select exists (select 1 from {}.nap_gate)", side.schema);
        while !side.db.fetch_bool(gate.clone(), &[]).await? {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok::<_, JobError>(())
    })
    .await?;
    run.sleep("2s").await?;
    run.step("resumed", async {
        side.record(&run, "nap-resumed").await?;
        Ok::<_, JobError>(())
    })
    .await?;
    Ok(())
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Capped {
    n: u64,
}

#[job(key = "capped:{n}", tenant = none, concurrency = 2)]
async fn capped_work(run: Run, _input: Capped) -> Result<(), JobError> {
    let side = run.context::<Side>()?;
    let started = format!(
        "insert into {}.runs (job_id, pid, started_at) values ($1, $2, clock_timestamp())",
        side.schema
    );
    sqlx::query(AssertSqlSafe(started))
        .bind(run.job_id())
        .bind(std::process::id() as i32)
        .execute(side.pool()?)
        .await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let ended = format!(
        "update {}.runs set ended_at = clock_timestamp() where job_id = $1 and ended_at is null",
        side.schema
    );
    sqlx::query(AssertSqlSafe(ended))
        .bind(run.job_id())
        .execute(side.pool()?)
        .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let url = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let visibility_ms: u64 = std::env::var("VISIBILITY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let block = std::env::var("BLOCK_SECOND_STEP").as_deref() == Ok("1");
    let (jobs, side) = if side_db::is_sqlite(&url) {
        let (jobs, db) = side_db::open_sqlite(&url, None).await?;
        let schema = "main".to_string();
        (jobs, Side { db, schema, block })
    } else if side_db::is_redis(&url) {
        let schema = std::env::var("JOBS_SCHEMA").expect("JOBS_SCHEMA");
        let side_url = std::env::var("SIDE_DATABASE_URL").expect("SIDE_DATABASE_URL");
        let db = SideDb::Postgres(side_db::postgres_pool(&side_url, "crash-worker")?);
        let driver = RedisDriver::connect(&url).await?;
        (Jobs::new(driver), Side { db, schema, block })
    } else {
        let schema = std::env::var("JOBS_SCHEMA").expect("JOBS_SCHEMA");
        let driver = PostgresDriver::connect(&url).await?.with_schema(&schema)?;
        let db = SideDb::Postgres(driver.pool().clone());
        (Jobs::new(driver), Side { db, schema, block })
    };
    if let Some(n) = std::env::var("ENQUEUE_BATCH")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return enqueue_batch(&jobs, n).await;
    }
    let mut builder = jobs.worker();
    if matches!(side.db, SideDb::Sqlite(_)) {
        // `capped_work` needs fleet-wide slots (a lease store) and Postgres' clock: the SQLite
        // worker runs `two_steps` alone.
        let mut registry = Registry::new();
        registry.register::<TwoSteps>()?;
        registry.register::<Nap>()?;
        builder = builder.registry(registry);
    }
    let poll = std::env::var("POLL_MS").ok().and_then(|v| v.parse().ok());
    let worker = builder
        .visibility_timeout(Duration::from_millis(visibility_ms))
        .poll_interval(Duration::from_millis(poll.unwrap_or(50)))
        .idle_poll_max(Duration::from_millis(poll.unwrap_or(200)))
        .context(std::sync::Arc::new(side))
        .build()?;
    let _running = worker.start();
    println!("ready");
    std::future::pending::<()>().await;
    Ok(())
}

/// One `enqueue_many` of `n` jobs: all of them are stored, or none.
async fn enqueue_batch(jobs: &Jobs, n: u64) -> Result<(), JobError> {
    let first: u64 = std::env::var("BATCH_FIRST")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    println!("ready");
    jobs.enqueue_many::<TwoSteps, _>((first..first + n).map(|n| Work { n }))
        .await?;
    println!("enqueued");
    Ok(())
}
