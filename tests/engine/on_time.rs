//! On-time starts: a delayed job, a retry after its backoff and a parked run start when due on
//! an idle worker of another client (its own `Jobs` over the same store), whose poll would
//! not come for an hour: the due time reaches it through the driver's wake, and its due timer
//! kicks a pass. Everything waits on the test clock; nothing sleeps on the wall clock.

use std::sync::Arc;
use std::time::Duration;

use jobs::clock::TestClock;
use jobs::driver::MemoryDriver;
use jobs::prelude::*;
use jobs::{ExecutionOutcome, Registry};

use crate::support::wait::{job_done as done, wait_until, worker_completed as completed};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Item {
    id: u64,
}

#[job(name = "on_time.plain", key = "plain:{id}", tenant = none)]
async fn on_time_plain(_run: Run, _input: Item) -> Result<(), JobError> {
    Ok(())
}

#[job(name = "on_time.retried", key = "retried:{id}", tenant = none, retry(attempts = 2, backoff = fixed, delay = "30s", jitter = none))]
async fn on_time_retried(run: Run, _input: Item) -> Result<u32, JobError> {
    if run.attempt() == 1 {
        return Err(JobError::retryable("first attempt fails"));
    }
    Ok(run.attempt())
}

#[job(name = "on_time.sleeper", key = "sleeper:{id}", tenant = none)]
async fn on_time_sleeper(run: Run, _input: Item) -> Result<(), JobError> {
    run.sleep("30s").await?;
    Ok(())
}

fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.register::<OnTimePlain>().expect("register");
    registry.register::<OnTimeRetried>().expect("register");
    registry.register::<OnTimeSleeper>().expect("register");
    registry
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_of_another_client_starts_delayed_retried_and_parked_jobs_when_due() {
    let driver = Arc::new(MemoryDriver::new());
    let clock = TestClock::new();
    let writer = Jobs::with_clock(driver.clone(), Arc::new(clock.clone()));
    let idle = Jobs::with_clock(driver.clone(), Arc::new(clock.clone()));
    // The writer's worker is driven by hand (no loop, no timer of its own); the idle one polls
    // once an hour.
    let by_hand = writer
        .worker()
        .registry(registry())
        .build()
        .expect("worker");
    let hour = Duration::from_secs(3600);
    let handle = idle
        .worker()
        .registry(registry())
        .poll_interval(hour)
        .idle_poll_max(hour)
        .build()
        .expect("worker")
        .start();
    // The idle worker has made its first pass and sleeps on the test clock.
    wait_until("the idle worker sleeps", || {
        let pending = clock.pending_timers();
        async move { pending >= 1 }
    })
    .await;

    // A delayed job, enqueued by the other client.
    let delayed = OnTimePlain::enqueue_with(
        &writer,
        Item { id: 1 },
        EnqueueOptions::new().delay(Duration::from_secs(30)),
    )
    .await
    .expect("enqueue");
    clock.advance(Duration::from_secs(30));
    done(&idle, delayed.id).await;
    completed(&handle, 1).await;

    // A retry after its 30 s backoff: the first attempt runs on the writer's worker.
    let retried = OnTimeRetried::enqueue(&writer, Item { id: 2 })
        .await
        .expect("enqueue");
    let first = by_hand.tick().await.expect("tick");
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].outcome, ExecutionOutcome::Retried);
    clock.advance(Duration::from_secs(30));
    done(&idle, retried.id).await;
    assert_eq!(idle.job(retried.id).await.unwrap().unwrap().attempt, 2);
    completed(&handle, 2).await;

    // A run parked by `run.sleep("30s")` on the writer's worker.
    let parked = OnTimeSleeper::enqueue(&writer, Item { id: 3 })
        .await
        .expect("enqueue");
    let first = by_hand.tick().await.expect("tick");
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].outcome, ExecutionOutcome::Suspended);
    clock.advance(Duration::from_secs(30));
    done(&idle, parked.id).await;
    completed(&handle, 3).await;
    handle.shutdown().await;
}
