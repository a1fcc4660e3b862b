//! A queue under a held snapshot: how fast it drains while another session keeps an old
//! snapshot open, so no dead row version can be cleaned up.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1/postgres cargo run --release --example held_snapshot
//! ```
//!
//! Every update-in-place queue leaves a dead row version behind on each claim and settle, and
//! the claim's index keeps entries for them until vacuum removes them; vacuum cannot while any
//! snapshot older than them is open. This runs a steady drain (a producer keeps about 5,000
//! no-op jobs queued; one worker with 16 slots on its own driver drains them), then opens an
//! idle `REPEATABLE READ` transaction on another connection and holds its snapshot for
//! `HELD_SECONDS` (60), then releases it. A probe claims one job every 100 ms on the same queue
//! and times that claim. Every 5 s it prints the window's completions per second, the probe's
//! claim p50/p95 and the table's dead row versions; at the end, each phase against the
//! baseline. Phase lengths: `BASELINE_SECONDS` (20), `HELD_SECONDS` (60), `AFTER_SECONDS` (20).
//! It works in a database of its own (`jobs_held_snapshot`, made anew and dropped at the end).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jobs::driver::{AckParams, ClaimParams, JobDriver, PostgresDriver, QueueDemand};
use jobs::prelude::*;
use jobs::sqlx::{self, Connection, PgConnection};

const DATABASE: &str = "jobs_held_snapshot";
/// Jobs the producer keeps queued ahead of the worker.
const BACKLOG: u64 = 5_000;
const WINDOW: Duration = Duration::from_secs(5);

#[input]
struct Beat {
    n: u64,
}

#[job(key = "tick:{n}", tenant = none)]
async fn tick(_run: Run, _input: Beat) -> Result<(), JobError> {
    Ok(())
}

fn seconds(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// One 5-second window of the run.
struct Window {
    phase: &'static str,
    per_second: f64,
    claims_ms: Vec<f64>,
}

async fn dead_rows(admin: &mut PgConnection) -> Result<i64, sqlx::Error> {
    sqlx::query("select pg_stat_clear_snapshot()")
        .execute(&mut *admin)
        .await?;
    sqlx::query_scalar(
        "select coalesce(sum(n_dead_tup), 0)::bigint from pg_stat_user_tables where relname = 'x_jobs'",
    )
    .fetch_one(&mut *admin)
    .await
}

/// Claims one job every 100 ms on the worker's queue, acks it, and records the claim's time.
async fn probe(driver: PostgresDriver, timings: Arc<Mutex<Vec<f64>>>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        let now = chrono::Utc::now();
        let started = Instant::now();
        let claimed = driver
            .job_claim(&ClaimParams {
                demand: vec![QueueDemand {
                    queue: "default".into(),
                    limit: 1,
                }],
                worker_id: "held-snapshot-probe".into(),
                visibility_timeout: Duration::from_secs(30),
                drop_exhausted: Vec::new(),
                fair_after: String::new(),
                now,
            })
            .await;
        let took = started.elapsed().as_secs_f64() * 1000.0;
        if let Ok(claimed) = claimed {
            timings.lock().expect("timings").push(took);
            for job in claimed.jobs {
                let ack = AckParams {
                    job_id: job.id,
                    by: job.by,
                    result: None,
                    now: chrono::Utc::now(),
                };
                let _ = driver.job_ack(&ack).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
    let phases = [
        ("baseline", seconds("BASELINE_SECONDS", 20)),
        ("held", seconds("HELD_SECONDS", 60)),
        ("after", seconds("AFTER_SECONDS", 20)),
    ];
    let mut admin = PgConnection::connect(&url).await?;
    let recreate = [
        format!("drop database if exists {DATABASE} with (force)"),
        format!("create database {DATABASE}"),
    ];
    for sql in recreate {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut admin)
            .await?;
    }
    let own_url = match url.rfind('/') {
        Some(slash) => format!("{}/{DATABASE}", &url[..slash]),
        None => return Err("DATABASE_URL has no database part".into()),
    };
    let client = PostgresDriver::connect(&own_url).await?;
    client.migrate().await?;
    let jobs = Jobs::new(client);
    // The worker on a driver and pool of its own, as another process would run it.
    let worker = Jobs::new(PostgresDriver::connect(&own_url).await?)
        .worker()
        .queues(["default"])
        .concurrency(16)
        .build()?;
    let running = worker.start();
    let mut stats = PgConnection::connect(&own_url).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let timings = Arc::new(Mutex::new(Vec::new()));
    let prober = tokio::spawn(probe(
        PostgresDriver::connect(&own_url).await?,
        timings.clone(),
        stop.clone(),
    ));
    let producer = {
        let (jobs, stop, worker) = (jobs.clone(), stop.clone(), worker.clone());
        tokio::spawn(async move {
            let mut next = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let done = worker.stats().completed;
                if next.saturating_sub(done) < BACKLOG {
                    let batch = (next..next + 500).map(|n| Beat { n });
                    Tick::enqueue_many(&jobs, batch).await?;
                    next += 500;
                } else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
            Ok::<_, JobError>(())
        })
    };

    let mut windows: Vec<Window> = Vec::new();
    let mut holder: Option<PgConnection> = None;
    println!("phase     window  done/s  claim p50 ms  p95 ms  dead row versions");
    for (phase, length) in phases {
        if phase == "held" {
            let mut conn = PgConnection::connect(&own_url).await?;
            sqlx::query("begin isolation level repeatable read")
                .execute(&mut conn)
                .await?;
            // The snapshot is taken by the transaction's first statement and kept to its end.
            sqlx::query("select count(*) from x_jobs")
                .execute(&mut conn)
                .await?;
            holder = Some(conn);
        } else if let Some(mut conn) = holder.take() {
            sqlx::query("commit").execute(&mut conn).await?;
        }
        let phase_started = Instant::now();
        while phase_started.elapsed() < Duration::from_secs(length) {
            let before = worker.stats().completed;
            timings.lock().expect("timings").clear();
            tokio::time::sleep(WINDOW).await;
            let per_second = (worker.stats().completed - before) as f64 / WINDOW.as_secs_f64();
            let mut claims_ms = std::mem::take(&mut *timings.lock().expect("timings"));
            claims_ms.sort_by(f64::total_cmp);
            println!(
                "{phase:<9} {:>5.0}s  {per_second:>6.0}  {:>12.2}  {:>6.2}  {}",
                phase_started.elapsed().as_secs_f64(),
                percentile(&claims_ms, 0.5),
                percentile(&claims_ms, 0.95),
                dead_rows(&mut stats).await?
            );
            windows.push(Window {
                phase,
                per_second,
                claims_ms,
            });
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = prober.await;
    producer.await??;
    running.shutdown().await;

    let summary = |phase: &str| {
        let of_phase: Vec<&Window> = windows.iter().filter(|w| w.phase == phase).collect();
        let rate = of_phase.iter().map(|w| w.per_second).sum::<f64>() / of_phase.len() as f64;
        let mut claims: Vec<f64> = of_phase.iter().flat_map(|w| w.claims_ms.clone()).collect();
        claims.sort_by(f64::total_cmp);
        (rate, percentile(&claims, 0.5), percentile(&claims, 0.95))
    };
    let (base, base_p50, base_p95) = summary("baseline");
    println!("\n| phase | done/s | x baseline | claim p50 / p95 ms |\n|---|---|---|---|");
    for phase in ["baseline", "held", "after"] {
        let (rate, p50, p95) = summary(phase);
        println!(
            "| {phase} | {rate:.0} | {:.2}x | {p50:.2} / {p95:.2} (baseline {base_p50:.2} / {base_p95:.2}) |",
            rate / base
        );
    }
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "drop database if exists {DATABASE} with (force)"
    )))
    .execute(&mut admin)
    .await?;
    Ok(())
}
