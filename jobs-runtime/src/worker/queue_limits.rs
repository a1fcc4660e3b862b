//! [`QueueLimits`]: a queue's fleet-wide limits, a cap on its runs in flight and a limit on its
//! starts over a sliding window, held in the driver's lease store beside the jobs' own
//! (`fleet_slots.rs`), set on the worker with
//! [`WorkerBuilder::queue_limits`](super::WorkerBuilder::queue_limits).

use std::time::Duration;

use crate::error::{ErrorCode, JobError};

/// A queue's fleet-wide limits, enforced across every worker process through the lease store:
/// at most `concurrency` runs of the queue's jobs at once, and at most `limit` starts in any
/// window of length `per`. Over either, a claim is handed back without spending an attempt.
///
/// The limits are counted by the store, not by a worker: every worker serving the queue must
/// be given the same values (a worker given another cap or rate counts against the same slots
/// with its own limit).
///
/// ```
/// use std::time::Duration;
/// use jobs::QueueLimits;
/// let email = QueueLimits::new().concurrency(10).rate(100, Duration::from_secs(60));
/// assert_eq!(email.concurrency_limit(), Some(10));
/// assert_eq!(email.rate_limit(), Some((100, Duration::from_secs(60))));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueLimits {
    concurrency: Option<u32>,
    rate: Option<(u32, Duration)>,
}

impl QueueLimits {
    /// No limit yet: add a cap, a rate or both.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs of the queue's jobs in flight at once, fleet-wide. At least 1.
    pub fn concurrency(mut self, runs: u32) -> Self {
        self.concurrency = Some(runs);
        self
    }

    /// Starts of the queue's jobs in any window of length `per`, fleet-wide: `limit` at least
    /// 1, `per` at least 1 ms.
    pub fn rate(mut self, limit: u32, per: Duration) -> Self {
        self.rate = Some((limit, per));
        self
    }

    /// The cap on runs in flight, if set.
    pub fn concurrency_limit(&self) -> Option<u32> {
        self.concurrency
    }

    /// The start limit and its window, if set.
    pub fn rate_limit(&self) -> Option<(u32, Duration)> {
        self.rate
    }

    /// Refuses a zero cap, a zero limit, a window under 1 ms, or no limit at all
    /// (`X_INVARIANT`).
    pub(crate) fn check(&self, queue: &str) -> Result<(), JobError> {
        let refuse = |why: String, fix: &str| {
            Err(JobError::new(ErrorCode::Invariant, why).with_fix(fix.to_owned()))
        };
        if self.concurrency.is_none() && self.rate.is_none() {
            return refuse(
                format!("the worker's limits for queue `{queue}` set no limit"),
                "add `.concurrency(n)`, `.rate(limit, per)` or both, or leave the queue out",
            );
        }
        if self.concurrency == Some(0) {
            return refuse(
                format!("the worker's fleet-wide cap for queue `{queue}` is 0"),
                "give a cap of at least 1 (0 would never run the queue's jobs), or leave \
                 `.concurrency` out for no cap",
            );
        }
        match self.rate {
            Some((0, _)) => refuse(
                format!("the worker's rate limit for queue `{queue}` allows 0 starts"),
                "allow at least 1 start per window (0 would never run the queue's jobs), or \
                 leave `.rate` out for no limit",
            ),
            Some((_, per)) if per < Duration::from_millis(1) => refuse(
                format!("the worker's rate window for queue `{queue}` is under 1 ms"),
                "give the window a duration of at least 1 ms, e.g. `Duration::from_secs(60)`",
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_empty_limits_are_refused() {
        let minute = Duration::from_secs(60);
        for limits in [
            QueueLimits::new(),
            QueueLimits::new().concurrency(0),
            QueueLimits::new().rate(0, minute),
            QueueLimits::new().rate(5, Duration::ZERO),
            QueueLimits::new().rate(5, Duration::from_micros(999)),
            QueueLimits::new().concurrency(2).rate(0, minute),
        ] {
            let error = limits.check("email").unwrap_err();
            assert_eq!(error.code(), Some(ErrorCode::Invariant), "{limits:?}");
            assert!(error.fix().is_some(), "{limits:?}");
            assert!(error.to_string().contains("`email`"), "{error}");
        }
        for limits in [
            QueueLimits::new().concurrency(1),
            QueueLimits::new().rate(1, Duration::from_millis(1)),
            QueueLimits::new().concurrency(10).rate(100, minute),
        ] {
            limits.check("email").unwrap();
        }
    }
}
