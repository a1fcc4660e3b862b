//! The quickstart: three jobs on the embedded default (an in-memory queue, no server), one
//! worker, and what happened to each.
//!
//! ```text
//! cargo run --example quickstart
//! ```

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use jobs::prelude::*;

#[input]
struct Signup {
    user_id: u64,
    org: String,
}

/// Two durable steps around a sleep: the first step's output is stored before it returns, so
/// when the run wakes from its sleep it replays `create-account` from storage instead of
/// running it again.
#[job(key = "welcome:{user_id}", tenant = org, queue = "email")]
async fn send_welcome(run: Run, input: Signup) -> Result<String, JobError> {
    let account: String = run
        .step("create-account", async {
            println!(
                "  [send_welcome] creating the account of user {}",
                input.user_id
            );
            Ok::<_, JobError>(format!("acct-{}", input.user_id))
        })
        .await?;
    run.sleep("1s").await?;
    run.step("send-email", async {
        println!("  [send_welcome] emailing {account} after the sleep");
        Ok::<_, JobError>(())
    })
    .await?;
    Ok(account)
}

#[input]
struct Payment {
    order_id: u64,
}

static CHARGE_CALLS: AtomicU32 = AtomicU32::new(0);

/// Fails twice (the provider is "down"), then succeeds on the third attempt.
#[job(
    key = "charge:{order_id}",
    tenant = none,
    retry(attempts = 4, backoff = exponential, delay = "100ms", jitter = none),
)]
async fn charge(run: Run, input: Payment) -> Result<u64, JobError> {
    let call = CHARGE_CALLS.fetch_add(1, Ordering::SeqCst) + 1;
    println!(
        "  [charge] attempt {} for order {}",
        run.attempt(),
        input.order_id
    );
    if call < 3 {
        return Err(JobError::retryable("the payment provider is unavailable"));
    }
    Ok(input.order_id)
}

#[input]
struct Import {
    file: String,
}

/// A terminal error dead-letters the job at once, its remaining attempts unspent.
#[job(key = "import:{file}", tenant = none, retry(attempts = 5))]
async fn import_file(_run: Run, input: Import) -> Result<(), JobError> {
    Err(JobError::terminal(format!(
        "{} is not a CSV file",
        input.file
    )))
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let jobs = Jobs::memory();

    let welcome = SendWelcome::enqueue(
        &jobs,
        Signup {
            user_id: 42,
            org: "acme".into(),
        },
    )
    .await?;
    let again = SendWelcome::enqueue(
        &jobs,
        Signup {
            user_id: 42,
            org: "acme".into(),
        },
    )
    .await?;
    println!(
        "enqueued send_welcome {}; the same key again is deduped: {} (same id: {})",
        welcome.id,
        again.deduped,
        again.id == welcome.id
    );
    let payment = Charge::enqueue(&jobs, Payment { order_id: 7 }).await?;
    let import = ImportFile::enqueue(
        &jobs,
        Import {
            file: "report.pdf".into(),
        },
    )
    .await?;

    let worker = jobs
        .worker()
        .poll_interval(Duration::from_millis(20))
        .idle_poll_max(Duration::from_millis(100))
        .build()?;
    let running = worker.start();

    // Wait, with a bound, until every job has ended.
    let ids = [welcome.id, payment.id, import.id];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let mut live = 0;
        for id in ids {
            if let Some(row) = jobs.job(id).await? {
                live += usize::from(row.state.is_live());
            }
        }
        if live == 0 || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    running.shutdown().await;

    println!("\nwhat happened:");
    for (label, id) in [
        ("send_welcome", welcome.id),
        ("charge", payment.id),
        ("import_file", import.id),
    ] {
        let row = jobs.job(id).await?.expect("the job exists");
        println!(
            "  {label:<13} {:<5} after {} counted attempt(s){}",
            row.state.as_str(),
            row.attempt,
            row.last_error
                .map(|e| format!("; last error: {e}"))
                .unwrap_or_default()
        );
    }
    println!("\nworker: {:?}", worker.stats());
    Ok(())
}
