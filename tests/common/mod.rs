//! Helpers shared by the integration tests. Declares no job (each test binary registers its
//! own).

#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use jobs::clock::Timestamp;

/// `to - from` as a std duration (panics when negative).
pub fn elapsed(from: Timestamp, to: Timestamp) -> Duration {
    (to - from)
        .to_std()
        .unwrap_or_else(|_| panic!("{to} is before {from}"))
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
