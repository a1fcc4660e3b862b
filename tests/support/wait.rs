//! Bounded waits on a condition (never a sleep to let time pass).

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
