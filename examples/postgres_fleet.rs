//! Two worker processes sharing one Postgres queue.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1/postgres cargo run --example postgres_fleet
//! ```
//!
//! This process migrates the schema, starts two copies of itself as workers, enqueues 100 jobs
//! (each with two durable steps), waits until every job is done and prints which worker ran
//! how many. Each job runs exactly once: the claim hands every row to one worker only.

use std::process::{Child, Command};
use std::time::Duration;

use jobs::driver::PostgresDriver;
use jobs::prelude::*;

const SCHEMA: &str = "example_fleet";
const JOBS: u64 = 100;

#[input]
struct Invoice {
    batch: String,
    invoice_id: u64,
}

/// Renders then sends an invoice; each step's output is stored before it returns.
#[job(key = "invoice:{batch}:{invoice_id}", tenant = none, queue = "invoices")]
async fn send_invoice(run: Run, input: Invoice) -> Result<String, JobError> {
    let pdf: String = run
        .step("render", async {
            Ok::<_, JobError>(format!("invoice-{}.pdf", input.invoice_id))
        })
        .await?;
    let worker = std::env::var("WORKER_NAME").unwrap_or_default();
    run.step("send", async move {
        Ok::<_, JobError>(format!("{pdf} sent by {worker}"))
    })
    .await
}

async fn driver() -> Result<PostgresDriver, JobError> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
    PostgresDriver::connect(&url).await?.with_schema(SCHEMA)
}

/// A worker process: runs until its parent closes its stdin.
async fn work(name: &str) -> Result<(), JobError> {
    let jobs = Jobs::new(driver().await?);
    let worker = jobs.worker().queues(["invoices"]).concurrency(4).build()?;
    let running = worker.start();
    tokio::task::spawn_blocking(|| {
        let mut sink = String::new();
        let _ = std::io::stdin().read_line(&mut sink);
    })
    .await
    .ok();
    running.shutdown().await;
    println!("{name}: {:?}", worker.stats());
    Ok(())
}

fn spawn_worker(name: &str) -> Child {
    Command::new(std::env::current_exe().expect("own path"))
        .arg("work")
        .env("WORKER_NAME", name)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("a worker process starts")
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    if std::env::args().nth(1).as_deref() == Some("work") {
        let name = std::env::var("WORKER_NAME").unwrap_or_default();
        return work(&name).await;
    }
    let driver = driver().await?;
    driver.migrate().await?;
    let jobs = Jobs::new(driver);
    let mut workers = [spawn_worker("worker-a"), spawn_worker("worker-b")];

    let batch = uuid::Uuid::now_v7().to_string();
    let inputs = (0..JOBS).map(|invoice_id| Invoice {
        batch: batch.clone(),
        invoice_id,
    });
    let queued = SendInvoice::enqueue_many(&jobs, inputs).await?;
    println!("enqueued {} jobs on queue `invoices`", queued.len());

    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let mut done = 0;
        for q in &queued {
            if jobs
                .job(q.id)
                .await?
                .is_some_and(|j| j.state == JobState::Done)
            {
                done += 1;
            }
        }
        if done == queued.len() || tokio::time::Instant::now() > deadline {
            println!("{done} of {} jobs done", queued.len());
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Closing each worker's stdin asks it to shut down gracefully.
    for worker in &mut workers {
        drop(worker.stdin.take());
    }
    for mut worker in workers {
        let _ = worker.wait();
    }
    Ok(())
}
