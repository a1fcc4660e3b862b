//! Shows that a claim costs about the same with one million ready rows queued as with ten.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1/postgres cargo run --release --example claim_bench
//! ```
//!
//! For each backlog size it fills a fresh schema with ready rows (one bulk `insert ... select`),
//! then times 300 claims of 10 jobs each; every claimed job is handed straight back (an
//! uncounted nack), so the backlog stays the same size throughout.

use std::time::{Duration, Instant};

use jobs::driver::{ClaimParams, JobDriver, NackParams, NackTarget, PostgresDriver, QueueDemand};
use jobs::sqlx::{self, AssertSqlSafe};
use jobs::JobError;

const CLAIMS: usize = 300;
const BATCH: u32 = 10;

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
    for backlog in [10_usize, 10_000, 1_000_000] {
        let schema = format!("bench_claim_{backlog}");
        let driver = PostgresDriver::connect(&url).await?.with_schema(&schema)?;
        let pool = driver.pool().clone();
        let reset = format!("drop schema if exists {schema} cascade");
        sqlx::query(AssertSqlSafe(reset))
            .execute(&pool)
            .await
            .expect("drop schema");
        driver.migrate().await?;
        let fill = Instant::now();
        let insert = format!(
            "insert into {schema}.x_jobs (id, run_id, name, queue, input, idempotency_key, state,
                 max_attempts, run_at, created_at, updated_at)
             select gen_random_uuid(), gen_random_uuid(), 'bench', 'default', '{{}}'::jsonb,
                    'k' || g, 'ready', 3, now() - interval '1 minute', now(), now()
             from generate_series(1, {backlog}) g"
        );
        sqlx::query(AssertSqlSafe(insert))
            .execute(&pool)
            .await
            .expect("fill");
        sqlx::query(AssertSqlSafe(format!("analyze {schema}.x_jobs")))
            .execute(&pool)
            .await
            .expect("analyze");
        let filled = fill.elapsed();

        let mut timings = Vec::with_capacity(CLAIMS);
        for _ in 0..CLAIMS {
            let now = chrono::Utc::now();
            let started = Instant::now();
            let claimed = driver
                .job_claim(&ClaimParams {
                    demand: vec![QueueDemand {
                        queue: "default".into(),
                        limit: BATCH,
                    }],
                    worker_id: "bench".into(),
                    visibility_timeout: Duration::from_secs(30),
                    drop_exhausted: Vec::new(),
                    now,
                })
                .await?;
            timings.push(started.elapsed());
            assert_eq!(claimed.jobs.len(), (BATCH as usize).min(backlog));
            for job in claimed.jobs {
                driver
                    .job_nack(&NackParams {
                        job_id: job.id,
                        by: job.by,
                        target: NackTarget::Retry,
                        run_at: now,
                        counts_as_attempt: false,
                        error: None,
                        error_code: None,
                        now,
                    })
                    .await?;
            }
        }
        timings.sort_unstable();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{backlog:>9} ready rows (filled in {:.1} s): claim of {BATCH}: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
            filled.as_secs_f64(),
            ms(timings[CLAIMS / 2]),
            ms(timings[CLAIMS * 95 / 100]),
            ms(timings[CLAIMS - 1]),
        );
        sqlx::query(AssertSqlSafe(format!("drop schema {schema} cascade")))
            .execute(&pool)
            .await
            .expect("drop schema");
    }
    Ok(())
}
