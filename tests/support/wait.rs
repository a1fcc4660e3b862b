//! Bounded waits on a condition or a future (never a sleep to let time pass).

use std::future::Future;
use std::time::Duration;

/// Waits for `condition`, checking every 20 ms, for at most `bound`; panics naming `what` when
/// it does not hold by then.
pub async fn until<F, Fut>(bound: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    assert!(
        within(bound, &mut condition).await,
        "timed out waiting for {what}"
    );
}

/// Waits for `condition`, checking every 20 ms, for at most `bound`: answers whether it held.
pub async fn within<F, Fut>(bound: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        if condition().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// [`within`] for a thread with no runtime (a process being started): checks `condition` every
/// 20 ms for at most `bound`; answers whether it held.
pub fn within_blocking(bound: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + bound;
    loop {
        if condition() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `condition` holds, checking between yields and 1 ms pauses, for at most 10 s of
/// real time: a bounded condition wait, never a fixed sleep.
pub async fn wait_until<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if condition().await {
                return;
            }
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "timed out waiting until {what}");
}

/// Awaits `future` for at most 10 s of real time.
pub async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// Waits (bounded, on a condition) until `handle`'s worker counted `n` completions: the count
/// moves just after the ack lands, so a reader of the job's state can be a moment ahead of it.
pub async fn worker_completed(handle: &jobs::WorkerHandle, n: u64) {
    let worker = handle.worker().clone();
    wait_until("the worker counts the completion", move || {
        let count = worker.stats().completed;
        async move { count >= n }
    })
    .await;
    assert_eq!(handle.worker().stats().completed, n);
}

/// Waits (bounded, on a condition) until job `id` is done.
pub async fn job_done(jobs: &jobs::Jobs, id: jobs::driver::JobId) {
    wait_until("the job is done", || {
        let jobs = jobs.clone();
        async move { jobs.job(id).await.unwrap().unwrap().state == jobs::JobState::Done }
    })
    .await;
}
