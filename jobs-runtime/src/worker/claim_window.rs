//! An attempt's claim window as the attempt itself can tell it: the claim holds until one
//! visibility timeout after the last renewal that landed. Past it, another worker may already
//! have taken the row, so the attempt starts no further step.
//!
//! The keeper learns of a lost claim only from a renewal's answer, a round trip after it is
//! due. A process that was paused (SIGSTOP, a suspended VM, a stalled runtime) wakes with its
//! renewals overdue; without this check its next step could start before the keeper's renewal
//! came back refused, while the worker that took the row over runs the same step. A closure
//! already under way when the process was paused still finishes: nothing can stop it.
//! The check reads the clock only; the keeper's rule for failed renewals is the same one
//! (`keeper::apply`).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::execute::StopReason;
use crate::clock::{add, Timestamp};

/// One attempt's claim window, shared by its run (which checks it) and the keeper (which
/// moves it on each renewal that lands).
#[derive(Debug)]
pub(crate) struct ClaimWindow {
    /// When the last renewal (or the claim) that landed was stamped, in microseconds.
    landed_us: AtomicI64,
    window: Duration,
    stop: Arc<Mutex<Option<StopReason>>>,
    cancel: CancellationToken,
}

impl ClaimWindow {
    /// A window of `window` from `landed`; a lapse records `LeaseLost` in `stop` and fires
    /// `cancel`, as the keeper does for a refused renewal.
    pub(crate) fn new(
        landed: Timestamp,
        window: Duration,
        stop: Arc<Mutex<Option<StopReason>>>,
        cancel: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(ClaimWindow {
            landed_us: AtomicI64::new(landed.timestamp_micros()),
            window,
            stop,
            cancel,
        })
    }

    /// A renewal stamped `at` landed.
    pub(crate) fn landed(&self, at: Timestamp) {
        self.landed_us
            .fetch_max(at.timestamp_micros(), Ordering::Relaxed);
    }

    /// Whether the claim still holds at `now`. When it does not, the attempt is stopped as a
    /// lost claim.
    pub(crate) fn holds(&self, now: Timestamp) -> bool {
        let landed =
            Timestamp::from_timestamp_micros(self.landed_us.load(Ordering::Relaxed)).unwrap_or(now);
        if now < add(landed, self.window) {
            return true;
        }
        self.stop
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(StopReason::LeaseLost);
        self.cancel.cancel();
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_timestamp_millis(1_800_000_000_000 + ms).expect("in range")
    }

    #[test]
    fn the_claim_holds_for_one_window_after_the_last_renewal_that_landed() {
        let stop = Arc::default();
        let cancel = CancellationToken::new();
        let window = ClaimWindow::new(
            at(0),
            Duration::from_millis(1_500),
            Arc::clone(&stop),
            cancel.clone(),
        );
        assert!(window.holds(at(1_499)));
        window.landed(at(1_000));
        // An older stamp landing late moves nothing back.
        window.landed(at(500));
        assert!(window.holds(at(2_499)));
        assert!(!cancel.is_cancelled());
        assert!(!window.holds(at(2_500)));
        assert!(cancel.is_cancelled());
        assert_eq!(*stop.lock().expect("stop"), Some(StopReason::LeaseLost));
    }
}
