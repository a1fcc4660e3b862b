//! A worker process for the Postgres process tests, on the schema named by `JOBS_SCHEMA`.
//!
//! - `two_steps` records each step closure's execution in `<schema>.side_effects`; with
//!   `BLOCK_SECOND_STEP=1` the second step never finishes, so the crash test can SIGKILL the
//!   process in the middle of it.
//! - `capped_work` (`concurrency = 2`, fleet-wide) records when each run starts and ends in
//!   `<schema>.runs`, so the concurrency test can check that no more than two ever overlap.

use std::time::Duration;

use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Work {
    n: u64,
}

#[derive(Clone)]
struct Side {
    pool: sqlx::PgPool,
    schema: String,
    block: bool,
}

impl Side {
    async fn record(&self, run: &Run, step: &str) -> Result<(), JobError> {
        let sql = format!(
            "insert into {}.side_effects (run_id, step, pid) values ($1, $2, $3)",
            self.schema
        );
        sqlx::query(AssertSqlSafe(sql))
            .bind(run.run_id())
            .bind(step)
            .bind(std::process::id() as i32)
            .execute(&self.pool)
            .await?;
        Ok(())
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
        .execute(&side.pool)
        .await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let ended = format!(
        "update {}.runs set ended_at = clock_timestamp() where job_id = $1 and ended_at is null",
        side.schema
    );
    sqlx::query(AssertSqlSafe(ended))
        .bind(run.job_id())
        .execute(&side.pool)
        .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let url = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let schema = std::env::var("JOBS_SCHEMA").expect("JOBS_SCHEMA");
    let visibility_ms: u64 = std::env::var("VISIBILITY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let driver = PostgresDriver::connect(&url).await?.with_schema(&schema)?;
    let side = Side {
        pool: driver.pool().clone(),
        schema: schema.clone(),
        block: std::env::var("BLOCK_SECOND_STEP").as_deref() == Ok("1"),
    };
    let jobs = Jobs::new(driver);
    let worker = jobs
        .worker()
        .visibility_timeout(Duration::from_millis(visibility_ms))
        .poll_interval(Duration::from_millis(50))
        .idle_poll_max(Duration::from_millis(200))
        .context(std::sync::Arc::new(side))
        .build()?;
    let _running = worker.start();
    println!("ready");
    std::future::pending::<()>().await;
    Ok(())
}
