//! Measures how fast an idle worker picks up a job enqueued by ANOTHER process, over Postgres
//! LISTEN/NOTIFY, and how many claims the idle worker issues.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1/postgres cargo run --release --example wake_latency
//! ```
//!
//! The worker runs in this process; a child process (this binary, `enqueue` mode) enqueues 200
//! jobs, one every 300 ms (past the 250 ms wake slot, so each one is announced), each carrying its wall-clock send time. The body records the pickup
//! latency. Both processes are on one machine, so their wall clocks agree.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jobs::driver::PostgresDriver;
use jobs::prelude::*;

const SCHEMA: &str = "bench_wake";
const JOBS: usize = 200;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Sent {
    bench: String,
    n: usize,
    sent_at_us: u128,
}

fn wall_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros()
}

type Latencies = Mutex<Vec<u128>>;

#[job(key = "ping:{bench}:{n}", tenant = none)]
async fn ping(run: Run, input: Sent) -> Result<(), JobError> {
    let latency = wall_us().saturating_sub(input.sent_at_us);
    run.context::<Latencies>()?
        .lock()
        .expect("latencies")
        .push(latency);
    Ok(())
}

async fn driver() -> Result<PostgresDriver, JobError> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
    PostgresDriver::connect(&url).await?.with_schema(SCHEMA)
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let driver = driver().await?;
    if std::env::args().nth(1).as_deref() == Some("enqueue") {
        let jobs = Jobs::new(driver);
        let bench = uuid::Uuid::now_v7().to_string();
        for n in 0..JOBS {
            let sent_at_us = wall_us();
            Ping::enqueue(
                &jobs,
                Sent {
                    bench: bench.clone(),
                    n,
                    sent_at_us,
                },
            )
            .await?;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        return Ok(());
    }

    driver.migrate().await?;
    let latencies: Arc<Latencies> = Arc::default();
    let jobs = Jobs::new(driver);
    let worker = jobs.worker().context(latencies.clone()).build()?;
    let running = worker.start();
    // Let the wake prove itself and the worker go idle before the first job.
    tokio::time::sleep(Duration::from_secs(3)).await;

    let child = std::process::Command::new(std::env::current_exe().expect("own path"))
        .arg("enqueue")
        .status()
        .expect("the enqueuer runs");
    assert!(child.success(), "the enqueuer failed");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while latencies.lock().expect("latencies").len() < JOBS
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let mut all = latencies.lock().expect("latencies").clone();
    all.sort_unstable();
    let pct = |p: f64| all[((all.len() as f64 - 1.0) * p).round() as usize] as f64 / 1000.0;
    println!(
        "pickup latency over {} jobs from another process: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        all.len(),
        pct(0.5),
        pct(0.95),
        pct(1.0)
    );

    tokio::time::sleep(Duration::from_secs(10)).await;
    let before = worker.stats().claims;
    let idle = Duration::from_secs(60);
    tokio::time::sleep(idle).await;
    let claims = worker.stats().claims - before;
    println!(
        "idle worker: {claims} claims in {} s ({:.1} a minute)",
        idle.as_secs(),
        claims as f64 * 60.0 / idle.as_secs_f64()
    );
    running.shutdown().await;
    Ok(())
}
