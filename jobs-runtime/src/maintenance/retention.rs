//! Retention: finished rows are deleted after a window, in bounded batches, so they never slow
//! the queue down. Done rows go after a short window, failed, dead and cancelled ones after a
//! longer one (an operator still reads those).

use std::time::Duration;

use crate::clock::Timestamp;
use crate::driver::JobPurgeParams;
use crate::error::JobError;
use crate::operator::Operator;

/// How long finished rows are kept, and how a sweep deletes them.
///
/// ```
/// use jobs::Retention;
/// use std::time::Duration;
///
/// let retention = Retention::default().done(Duration::from_secs(3600));
/// assert_eq!(retention.finished_window(), Duration::from_secs(7 * 86_400));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    done: Duration,
    finished: Duration,
    batch: u32,
    every: Duration,
}

impl Default for Retention {
    /// Done rows for a day, failed/dead/cancelled for a week; batches of 1,000; a sweep a
    /// minute.
    fn default() -> Self {
        Retention {
            done: Duration::from_secs(86_400),
            finished: Duration::from_secs(7 * 86_400),
            batch: 1_000,
            every: Duration::from_secs(60),
        }
    }
}

impl Retention {
    /// Keeps `done` rows this long after they settled.
    pub fn done(mut self, window: Duration) -> Self {
        self.done = window;
        self
    }

    /// Keeps `failed`, `dead` and `cancelled` rows this long after they settled.
    pub fn finished(mut self, window: Duration) -> Self {
        self.finished = window;
        self
    }

    /// Rows per delete statement.
    pub fn batch(mut self, rows: u32) -> Self {
        self.batch = rows.max(1);
        self
    }

    /// How often a worker sweeps.
    pub fn every(mut self, interval: Duration) -> Self {
        self.every = interval;
        self
    }

    /// The done window.
    pub fn done_window(&self) -> Duration {
        self.done
    }

    /// The failed/dead/cancelled window.
    pub fn finished_window(&self) -> Duration {
        self.finished
    }

    /// The sweep interval.
    pub fn interval(&self) -> Duration {
        self.every
    }

    /// The delete of one batch at `now`.
    pub(crate) fn params(&self, now: Timestamp) -> JobPurgeParams {
        let before = |window: Duration| {
            chrono::Duration::from_std(window)
                .ok()
                .and_then(|w| now.checked_sub_signed(w))
                .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC)
        };
        JobPurgeParams {
            done_before: before(self.done),
            finished_before: before(self.finished),
            limit: self.batch,
        }
    }
}

/// Batches one sweep takes at most, so a huge backlog is worked off over several sweeps.
const MAX_BATCHES_PER_SWEEP: usize = 100;

impl Operator<'_> {
    /// Deletes finished rows past their windows, batch after batch, until a batch comes back
    /// short (or 100 batches ran). Answers the rows deleted.
    pub async fn purge_finished(&self, retention: &Retention) -> Result<u64, JobError> {
        let mut total = 0;
        for _ in 0..MAX_BATCHES_PER_SWEEP {
            let gone = self
                .jobs
                .driver()
                .job_purge(&retention.params(self.jobs.now()))
                .await?;
            total += gone;
            if gone < u64::from(retention.batch) {
                break;
            }
        }
        Ok(total)
    }
}
