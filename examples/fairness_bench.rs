//! Tenant fairness in the claim: one tenant holds 50,000 ready jobs, nine others hold 100 each,
//! enqueued AFTER the big backlog. With a first-in-first-out claim the nine would wait for all
//! 50,000; with the fair claim they finish while the big tenant's backlog is still draining.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1/postgres cargo run --release --example fairness_bench
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};

const SCHEMA: &str = "bench_fairness";
const BIG: usize = 50_000;
const SMALL_TENANTS: usize = 9;
const SMALL: usize = 100;

#[input]
struct Import {
    tenant: String,
    row: u64,
}

/// When each tenant's jobs finished, in milliseconds since the small tenants were enqueued.
type Finished = Mutex<HashMap<String, Vec<u128>>>;

struct Bench {
    started: Instant,
    finished: Finished,
}

#[job(key = "import:{tenant}:{row}", tenant = tenant)]
async fn import_row(run: Run, input: Import) -> Result<(), JobError> {
    // A little work, so that the queue drains at a realistic pace.
    tokio::time::sleep(Duration::from_millis(2)).await;
    let bench = run.context::<Bench>()?;
    let at = bench.started.elapsed().as_millis();
    bench
        .finished
        .lock()
        .expect("finished")
        .entry(input.tenant)
        .or_default()
        .push(at);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
    let driver = PostgresDriver::connect(&url).await?.with_schema(SCHEMA)?;
    let pool = driver.pool().clone();
    sqlx::query(AssertSqlSafe(format!(
        "drop schema if exists {SCHEMA} cascade"
    )))
    .execute(&pool)
    .await
    .expect("reset");
    driver.migrate().await?;

    // The big tenant's backlog, in one statement, due a minute ago (older than everyone else's).
    let fill = format!(
        "insert into {SCHEMA}.x_jobs (id, run_id, name, queue, input, idempotency_key, tenant_id,
             state, max_attempts, run_at, created_at, updated_at)
         select gen_random_uuid(), gen_random_uuid(), 'import_row', 'default',
                jsonb_build_object('tenant', 'big', 'row', g), 'import:big:' || g, 'big',
                'ready', 3, now() - interval '1 minute', now(), now()
         from generate_series(1, {BIG}) g"
    );
    sqlx::query(AssertSqlSafe(fill))
        .execute(&pool)
        .await
        .expect("fill");
    sqlx::query(AssertSqlSafe(format!("analyze {SCHEMA}.x_jobs")))
        .execute(&pool)
        .await
        .expect("analyze");

    let jobs = Jobs::new(driver);
    let inputs = (0..SMALL_TENANTS).flat_map(|t| {
        (0..SMALL as u64).map(move |row| Import {
            tenant: format!("small-{t}"),
            row,
        })
    });
    ImportRow::enqueue_many(&jobs, inputs).await?;

    let bench = Arc::new(Bench {
        started: Instant::now(),
        finished: Mutex::default(),
    });
    let worker = jobs
        .worker()
        .concurrency(16)
        .context(bench.clone())
        .build()?;
    let running = worker.start();
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let small_done: usize = {
            let finished = bench.finished.lock().expect("finished");
            finished
                .iter()
                .filter(|(t, _)| t.starts_with("small"))
                .map(|(_, v)| v.len())
                .sum()
        };
        if small_done == SMALL_TENANTS * SMALL || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = bench.started.elapsed();
    running.shutdown().await;

    let finished = bench.finished.lock().expect("finished");
    let mut small: Vec<u128> = finished
        .iter()
        .filter(|(t, _)| t.starts_with("small"))
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    small.sort_unstable();
    let big_done = finished.get("big").map_or(0, Vec::len);
    let pct = |v: &[u128], p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{} small-tenant jobs ({SMALL_TENANTS} tenants x {SMALL}) behind a {BIG}-job backlog, 16 slots:",
        small.len()
    );
    println!(
        "  small tenants finished: p50 {} ms, p95 {} ms, last {} ms after they were enqueued",
        pct(&small, 0.5),
        pct(&small, 0.95),
        small.last().copied().unwrap_or_default()
    );
    println!(
        "  meanwhile the big tenant ran {big_done} of its {BIG} jobs ({:.0} jobs/s overall); \
         a first-in-first-out claim would have run all {BIG} first",
        (big_done + small.len()) as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}
