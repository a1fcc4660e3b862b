//! Counts per queue and state, and the read that asks for them.

use serde::{Deserialize, Serialize};

use super::JobState;
use crate::clock::Timestamp;

/// Counts for one queue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueStats {
    /// The queue.
    pub queue: String,
    /// Ready and due.
    pub ready: u64,
    /// Waiting on their run time (delayed, or ready and backing off).
    pub delayed: u64,
    /// Running.
    pub running: u64,
    /// Sleeping or waiting for an event.
    pub suspended: u64,
    /// Done.
    pub done: u64,
    /// Failed for good.
    pub failed: u64,
    /// Dead-lettered.
    pub dead: u64,
    /// Cancelled.
    pub cancelled: u64,
    /// Age of the oldest ready and due job, in milliseconds.
    pub oldest_ready_ms: Option<u64>,
}

impl QueueStats {
    /// Adds `n` jobs in `state`, `due` or not yet, the oldest of them due at `oldest_run_at`, as
    /// of `now`: a ready or delayed job not yet due counts as delayed, a due one as ready and
    /// ages `oldest_ready_ms`. Every driver folds its counts through this, so all count alike.
    ///
    /// ```
    /// use jobs::driver::{JobState, QueueStats};
    /// let now = chrono::Utc::now();
    /// let mut stats = QueueStats::default();
    /// stats.add(JobState::Ready, true, 2, Some(now - chrono::Duration::seconds(3)), now);
    /// stats.add(JobState::Delayed, false, 1, Some(now + chrono::Duration::seconds(9)), now);
    /// assert_eq!((stats.ready, stats.delayed, stats.oldest_ready_ms), (2, 1, Some(3_000)));
    /// ```
    pub fn add(
        &mut self,
        state: JobState,
        due: bool,
        n: u64,
        oldest_run_at: Option<Timestamp>,
        now: Timestamp,
    ) {
        match state {
            JobState::Ready | JobState::Delayed if !due => self.delayed += n,
            JobState::Ready | JobState::Delayed => {
                self.ready += n;
                if let Some(oldest) = oldest_run_at {
                    let age = (now - oldest).num_milliseconds().max(0) as u64;
                    self.oldest_ready_ms = Some(self.oldest_ready_ms.unwrap_or(0).max(age));
                }
            }
            JobState::Running => self.running += n,
            JobState::Suspended => self.suspended += n,
            JobState::Done => self.done += n,
            JobState::Failed => self.failed += n,
            JobState::Dead => self.dead += n,
            JobState::Cancelled => self.cancelled += n,
        }
    }
}

/// Count jobs per queue and state.
#[derive(Debug, Clone, Copy)]
pub struct QueueStatsParams {
    /// Now, on the injected clock.
    pub now: Timestamp,
}

/// What `jobs verify` reads of a store ([`JobDriver::store_check`](crate::driver::JobDriver::store_check)):
/// the embedded migrations it lacks, and the settings that decide whether an acknowledged write
/// survives a crash.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreCheck {
    /// Embedded migrations not applied to the store, by version (all of them when its tables
    /// do not exist).
    pub pending_migrations: Vec<i32>,
    /// The settings read, as `(name, value)`.
    pub settings: Vec<(String, String)>,
    /// How an acknowledged write could be lost in a crash, if it could; `None`: durable as far
    /// as the settings tell.
    pub weakness: Option<String>,
}
