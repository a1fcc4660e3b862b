//! Durable on a file: a run killed in the middle finishes from its last completed step.
//!
//! ```text
//! cargo run --example sqlite_durable            # in a fresh temp directory
//! cargo run --example sqlite_durable -- ./demo  # or in ./demo (the file is ./demo/jobs.db)
//! ```
//!
//! This process starts a copy of itself as the worker over `sqlite://<dir>/jobs.db`. The job
//! charges a card (step `charge`), sleeps durably for two seconds, then mails a receipt (step
//! `receipt`); each step appends its name to `<dir>/steps.log` when its closure runs. Once the
//! charge is stored and the run sleeps, this process kills the worker (SIGKILL: no shutdown,
//! no chance to save anything), starts a new one, and waits for the job to finish. The log then
//! shows each step ran once: the new worker took the stored charge instead of charging again.
//! Exit code 1 if a step ran twice or the job did not finish.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use jobs::prelude::*;

#[input]
struct Order {
    order_id: u64,
}

/// Appends `step` to the log: the proof of how often a closure ran.
fn record(dir: &Path, step: &str) -> Result<(), JobError> {
    use std::io::Write;
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("steps.log"))
        .map_err(|e| JobError::new(ErrorCode::Invariant, format!("steps.log: {e}")))?;
    writeln!(log, "{step}")
        .map_err(|e| JobError::new(ErrorCode::Invariant, format!("steps.log: {e}")))
}

fn dir() -> PathBuf {
    PathBuf::from(std::env::var("DEMO_DIR").expect("the parent sets DEMO_DIR"))
}

#[job(key = "order:{order_id}", tenant = none, queue = "orders")]
async fn fulfil_order(run: Run, input: Order) -> Result<String, JobError> {
    let charge: String = run
        .step("charge", async {
            record(&dir(), "charge")?;
            Ok::<_, JobError>(format!("charge-{}", input.order_id))
        })
        .await?;
    // Durable: the worker may die here; the next one wakes the run when the time is up.
    run.sleep("2s").await?;
    run.step("receipt", async move {
        record(&dir(), "receipt")?;
        Ok::<_, JobError>(format!("receipt for {charge}"))
    })
    .await
}

/// The worker process: runs until it is killed.
async fn work(url: &str) -> Result<(), JobError> {
    let jobs = Jobs::open(url).await?;
    let worker = jobs.worker().queues(["orders"]).build()?;
    let _running = worker.start();
    std::future::pending::<()>().await;
    Ok(())
}

fn spawn_worker(dir: &Path, url: &str) -> Child {
    Command::new(std::env::current_exe().expect("own path"))
        .args(["work", url])
        .env("DEMO_DIR", dir)
        .spawn()
        .expect("a worker process starts")
}

fn steps(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("steps.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Polls `check` every 50 ms until it holds, for at most `limit`.
async fn wait_for(limit: Duration, mut check: impl AsyncFnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("work") {
        let url = args.next().expect("work <url>");
        if let Err(error) = work(&url).await {
            eprintln!("worker: {error}");
        }
        return std::process::ExitCode::FAILURE;
    }
    match demo(std::env::args().nth(1).map(PathBuf::from)).await {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn demo(dir: Option<PathBuf>) -> Result<bool, JobError> {
    let dir = dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("jobs-sqlite-durable-{}", uuid::Uuid::now_v7()))
    });
    std::fs::create_dir_all(&dir)
        .map_err(|e| JobError::new(ErrorCode::Invariant, format!("{}: {e}", dir.display())))?;
    let _ = std::fs::remove_file(dir.join("steps.log"));
    let url = format!("sqlite://{}", dir.join("jobs.db").display());
    let jobs = Jobs::open(&url).await?;
    let order_id = u64::try_from(chrono::Utc::now().timestamp_millis()).unwrap_or(1);
    let queued = FulfilOrder::enqueue(&jobs, Order { order_id }).await?;
    println!("enqueued job {} on {url}", queued.id);

    let mut first = spawn_worker(&dir, &url);
    let sleeping = wait_for(Duration::from_secs(30), async || {
        let job = jobs.job(queued.id).await.ok().flatten();
        job.is_some_and(|j| j.state == JobState::Suspended) && steps(&dir) == ["charge"]
    })
    .await;
    let _ = first.kill();
    let _ = first.wait();
    if !sleeping {
        println!("the first worker never reached the sleep");
        return Ok(false);
    }
    println!("charged; the run sleeps; worker killed with SIGKILL");

    let mut second = spawn_worker(&dir, &url);
    let done = wait_for(Duration::from_secs(30), async || {
        let job = jobs.job(queued.id).await.ok().flatten();
        job.is_some_and(|j| j.state == JobState::Done)
    })
    .await;
    let _ = second.kill();
    let _ = second.wait();
    let ran = steps(&dir);
    println!(
        "a new worker finished the job: {}",
        if done { "done" } else { "NOT done" }
    );
    println!("steps run, in order: {}", ran.join(", "));
    Ok(done && ran == ["charge", "receipt"])
}
