//! The injected clock. Nothing in the library reads the wall clock directly: every component
//! asks a [`Clock`], so a [`TestClock`] makes `sleep("3d")`, backoff and timeouts testable
//! without waiting.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use tokio::sync::oneshot;

/// A point in time, in UTC.
pub type Timestamp = DateTime<Utc>;

/// A source of time and of timers.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;
    /// Resolves once `now() >= deadline`.
    fn sleep_until(&self, deadline: Timestamp) -> BoxFuture<'static, ()>;
    /// Resolves after `duration` has passed on this clock.
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.sleep_until(add(self.now(), duration))
    }
    /// A throttle's pause of `duration` (a backfill's pacer): a real clock sleeps; a frozen
    /// [`TestClock`] moves itself forward instead and returns at once, so a throttled sweep
    /// finishes in a test and the clock shows what the throttle cost.
    fn pace(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.sleep(duration)
    }
}

/// `at + duration`, saturating instead of overflowing.
pub fn add(at: Timestamp, duration: Duration) -> Timestamp {
    chrono::Duration::from_std(duration)
        .ok()
        .and_then(|d| at.checked_add_signed(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// `at - duration`, saturating instead of overflowing.
pub fn sub(at: Timestamp, duration: Duration) -> Timestamp {
    chrono::Duration::from_std(duration)
        .ok()
        .and_then(|d| at.checked_sub_signed(d))
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// The real clock: `Utc::now()` and tokio timers.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Utc::now()
    }

    fn sleep_until(&self, deadline: Timestamp) -> BoxFuture<'static, ()> {
        let wait = (deadline - Utc::now()).to_std().unwrap_or_default();
        Box::pin(tokio::time::sleep(wait))
    }

    /// A tokio timer of `duration`, without reading the wall clock twice to get there (the
    /// worker loop asks for one per pass).
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// A clock that only moves when told to.
///
/// ```
/// use jobs::clock::{Clock, TestClock};
/// use std::time::Duration;
///
/// let clock = TestClock::new();
/// let start = clock.now();
/// clock.advance(Duration::from_secs(3 * 24 * 3600));
/// assert_eq!((clock.now() - start).num_days(), 3);
/// ```
#[derive(Clone)]
pub struct TestClock {
    state: Arc<Mutex<TestClockState>>,
}

struct TestClockState {
    now: Timestamp,
    sleepers: Vec<(Timestamp, oneshot::Sender<()>)>,
}

impl TestClock {
    /// A clock frozen at 2030-01-01T00:00:00Z.
    pub fn new() -> Self {
        Self::at(
            DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z")
                .expect("valid literal")
                .with_timezone(&Utc),
        )
    }

    /// A clock frozen at `now`.
    pub fn at(now: Timestamp) -> Self {
        TestClock {
            state: Arc::new(Mutex::new(TestClockState {
                now,
                sleepers: Vec::new(),
            })),
        }
    }

    /// Moves time forward and wakes every timer that is due.
    pub fn advance(&self, by: Duration) {
        let mut state = self.state.lock().expect("test clock poisoned");
        state.now = add(state.now, by);
        let now = state.now;
        let (due, waiting): (Vec<_>, Vec<_>) =
            state.sleepers.drain(..).partition(|(at, _)| *at <= now);
        state.sleepers = waiting;
        drop(state);
        for (_, wake) in due {
            let _ = wake.send(());
        }
    }

    /// Moves time to `at` (never backwards) and wakes every timer that is due.
    pub fn set(&self, at: Timestamp) {
        let now = self.now();
        if at > now {
            self.advance((at - now).to_std().unwrap_or_default());
        }
    }

    /// How many timers are waiting on this clock.
    pub fn pending_timers(&self) -> usize {
        let mut state = self.state.lock().expect("test clock poisoned");
        state.sleepers.retain(|(_, wake)| !wake.is_closed());
        state.sleepers.len()
    }
}

impl Default for TestClock {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for TestClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestClock")
            .field("now", &self.now())
            .finish()
    }
}

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        self.state.lock().expect("test clock poisoned").now
    }

    fn pace(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.advance(duration);
        Box::pin(async {})
    }

    fn sleep_until(&self, deadline: Timestamp) -> BoxFuture<'static, ()> {
        let mut state = self.state.lock().expect("test clock poisoned");
        if deadline <= state.now {
            return Box::pin(async {});
        }
        let (wake, woken) = oneshot::channel();
        state.sleepers.push((deadline, wake));
        Box::pin(async move {
            let _ = woken.await;
        })
    }
}

/// A shared clock handle.
pub type SharedClock = Arc<dyn Clock>;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn test_clock_wakes_only_due_timers() {
        let clock = TestClock::new();
        let short = clock.sleep(Duration::from_secs(10));
        let long = clock.sleep(Duration::from_secs(100));
        clock.advance(Duration::from_secs(10));
        short.await;
        assert_eq!(clock.pending_timers(), 1);
        clock.advance(Duration::from_secs(90));
        long.await;
        assert_eq!(clock.pending_timers(), 0);
    }
}
