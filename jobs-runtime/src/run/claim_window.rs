//! An attempt's claim window as the attempt itself can tell it: the claim holds until one
//! visibility timeout after the last renewal that landed. Past it, another worker may already
//! have taken the row, so the attempt starts no further step.
//!
//! The keeper learns of a lost claim only from a renewal's answer, a round trip after it is
//! due. A process that was paused (SIGSTOP, a suspended VM, a stalled runtime) wakes with its
//! renewals overdue; without this check its next step could start before the keeper's renewal
//! came back refused, while the worker that took the row over runs the same step. A closure
//! already under way when the process was paused still finishes: nothing can stop it.
//! The check reads the clock only; the keeper applies it too when a renewal fails
//! (`worker::keeper::apply`).
//!
//! The window also keeps why the attempt was stopped (the first reason wins), so an attempt
//! shares one allocation between its run, its keeper and its executor.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::{add, Timestamp};

/// Why an attempt's cancellation fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    Timeout,
    LeaseLost,
    SlotLost,
    Draining,
}

/// One attempt's claim window and stop reason, shared by its run (which checks the window), its
/// keeper (which moves it on each renewal that lands) and its executor (which reads the reason).
#[derive(Debug)]
pub(crate) struct ClaimWindow {
    /// When the last renewal (or the claim) that landed was stamped, in microseconds.
    landed_us: AtomicI64,
    window: Duration,
    stop: Mutex<Option<StopReason>>,
}

impl ClaimWindow {
    /// A window of `window` from `landed`, with no stop reason yet.
    pub(crate) fn new(landed: Timestamp, window: Duration) -> Arc<Self> {
        Arc::new(ClaimWindow {
            landed_us: AtomicI64::new(landed.timestamp_micros()),
            window,
            stop: Mutex::new(None),
        })
    }

    /// A renewal stamped `at` landed.
    pub(crate) fn landed(&self, at: Timestamp) {
        self.landed_us
            .fetch_max(at.timestamp_micros(), Ordering::Relaxed);
    }

    /// When the last renewal (or the claim) that landed was stamped.
    pub(crate) fn landed_at(&self) -> Timestamp {
        Timestamp::from_timestamp_micros(self.landed_us.load(Ordering::Relaxed)).unwrap_or_default()
    }

    /// Whether the claim still holds at `now`. When it does not, the attempt's stop reason
    /// becomes `LeaseLost` (unless it was stopped already); the caller cancels the run.
    pub(crate) fn holds(&self, now: Timestamp) -> bool {
        if now < add(self.landed_at(), self.window) {
            return true;
        }
        self.stop(StopReason::LeaseLost);
        false
    }

    /// Records why the attempt stops; the first reason recorded stays.
    pub(crate) fn stop(&self, reason: StopReason) {
        self.stop
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(reason);
    }

    /// Why the attempt was stopped, if it was.
    pub(crate) fn stop_reason(&self) -> Option<StopReason> {
        *self.stop.lock().unwrap_or_else(|e| e.into_inner())
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
        let window = ClaimWindow::new(at(0), Duration::from_millis(1_500));
        assert!(window.holds(at(1_499)));
        window.landed(at(1_000));
        // An older stamp landing late moves nothing back.
        window.landed(at(500));
        assert_eq!(window.landed_at(), at(1_000));
        assert!(window.holds(at(2_499)));
        assert_eq!(window.stop_reason(), None);
        assert!(!window.holds(at(2_500)));
        assert_eq!(window.stop_reason(), Some(StopReason::LeaseLost));
    }

    #[test]
    fn the_first_stop_reason_stays() {
        let window = ClaimWindow::new(at(0), Duration::from_millis(1_500));
        window.stop(StopReason::Timeout);
        assert!(!window.holds(at(1_500)));
        assert_eq!(window.stop_reason(), Some(StopReason::Timeout));
    }
}
