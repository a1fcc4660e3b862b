//! The pacer: at most `rate` pages per second, waited on the run's clock.

use std::time::Duration;

use crate::clock::{add, SharedClock, Timestamp};
use crate::error::{ErrorCode, JobError};

/// Spaces a pass's pages `1 / rate` seconds apart, on an injected clock.
///
/// The first page goes at once; each later one waits until its slot. The wait is the clock's
/// [`pace`](crate::clock::Clock::pace): a real clock sleeps, a
/// [`TestClock`](crate::clock::TestClock) advances. It unwinds with `X_ABORTED` when `cancel`
/// fires.
///
/// ```
/// use jobs::backfill::Pacer;
/// use std::time::Duration;
///
/// let pacer = Pacer::new(4.0);
/// assert_eq!(pacer.interval(), Duration::from_millis(250));
/// ```
#[derive(Debug, Clone)]
pub struct Pacer {
    interval: Duration,
    last: Option<Timestamp>,
}

impl Pacer {
    /// A pacer for `rate` pages per second. A rate that is not finite and above 0 is clamped to
    /// one page per day: the macro refuses such literals, so this only guards computed values.
    pub fn new(rate: f64) -> Self {
        let interval = if rate.is_finite() && rate > 0.0 {
            Duration::try_from_secs_f64(1.0 / rate).unwrap_or(Duration::from_secs(86_400))
        } else {
            Duration::from_secs(86_400)
        };
        Pacer {
            interval,
            last: None,
        }
    }

    /// The spacing between two pages.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Waits for the next page's slot, then takes it.
    pub async fn wait(
        &mut self,
        clock: &SharedClock,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<(), JobError> {
        if let Some(last) = self.last {
            let due = add(last, self.interval);
            let now = clock.now();
            if due > now {
                let wait = (due - now).to_std().unwrap_or_default();
                tokio::select! {
                    biased;
                    _ = clock.pace(wait) => {}
                    _ = cancel.cancelled() => return Err(aborted()),
                }
                // Let the timers the pause woke run first (the claim's heartbeat, which may
                // find the run cancelled), so a cancellation lands before the next page.
                tokio::task::yield_now().await;
            }
        }
        if cancel.is_cancelled() {
            return Err(aborted());
        }
        self.last = Some(clock.now());
        Ok(())
    }
}

fn aborted() -> JobError {
    JobError::new(
        ErrorCode::Aborted,
        "the pass (a backfill, an export or an import) was cancelled while it waited for its next page",
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::{Clock, SystemClock, TestClock};

    #[tokio::test]
    async fn waits_advance_a_test_clock_by_the_interval() {
        let clock = TestClock::new();
        let shared: SharedClock = Arc::new(clock.clone());
        let start = clock.now();
        let mut pacer = Pacer::new(5.0);
        let cancel = tokio_util::sync::CancellationToken::new();
        for _ in 0..10 {
            pacer.wait(&shared, &cancel).await.unwrap();
        }
        // The first page goes at once, nine more wait 200 ms each.
        assert_eq!((clock.now() - start).num_milliseconds(), 1_800);
    }

    #[tokio::test]
    async fn a_cancelled_wait_unwinds_with_aborted() {
        // One page per 100 s on the real clock: only the cancellation can end the wait.
        let shared: SharedClock = Arc::new(SystemClock);
        let mut pacer = Pacer::new(0.01);
        let cancel = tokio_util::sync::CancellationToken::new();
        pacer.wait(&shared, &cancel).await.unwrap();
        let trigger = cancel.clone();
        tokio::spawn(async move { trigger.cancel() });
        let started = std::time::Instant::now();
        let error = pacer.wait(&shared, &cancel).await.unwrap_err();
        assert!(error.is(ErrorCode::Aborted), "{error}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn fractional_rates_space_pages_further() {
        assert_eq!(Pacer::new(0.5).interval(), Duration::from_secs(2));
        assert_eq!(Pacer::new(200.0).interval(), Duration::from_millis(5));
        assert_eq!(Pacer::new(0.0).interval(), Duration::from_secs(86_400));
        assert_eq!(Pacer::new(f64::NAN).interval(), Duration::from_secs(86_400));
    }
}
