//! Per-job counters in three tiers of buckets: what a settle adds, the buckets and totals an
//! operator reads, and the rollup that folds old buckets into the next tier.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::driver::records::JobState;

/// One counter tier: buckets of `bucket` kept for `keep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterTier {
    /// The bucket width.
    pub bucket: Duration,
    /// How long buckets of this width are kept before they fold into the next tier.
    pub keep: Duration,
}

/// The counter tiers: 1-minute buckets for 24 hours, 5-minute buckets for 7 days, 1-hour
/// buckets for 30 days: at most [`MAX_COUNTER_ROWS_PER_JOB`] rows per job name once rolled up.
pub const COUNTER_TIERS: [CounterTier; 3] = [
    CounterTier {
        bucket: Duration::from_secs(60),
        keep: Duration::from_secs(24 * 3600),
    },
    CounterTier {
        bucket: Duration::from_secs(5 * 60),
        keep: Duration::from_secs(7 * 24 * 3600),
    },
    CounterTier {
        bucket: Duration::from_secs(3600),
        keep: Duration::from_secs(30 * 24 * 3600),
    },
];

/// 1,440 + 2,016 + 720.
pub const MAX_COUNTER_ROWS_PER_JOB: usize = 4_176;
/// One counter bucket of one job name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterBucket {
    /// The bucket's start.
    pub bucket: Option<Timestamp>,
    /// The bucket's width in seconds (60, 300 or 3600).
    pub width_secs: u32,
    /// Runs completed.
    pub done: u64,
    /// Attempts failed and retried.
    pub retried: u64,
    /// Runs failed for good without a dead letter.
    pub failed: u64,
    /// Runs dead-lettered.
    pub dead: u64,
    /// Time spent by the completed and failed attempts counted here, in milliseconds.
    pub duration_ms: u64,
}

/// One job name's counters since a time, summed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterTotals {
    /// The job name.
    pub name: String,
    /// Runs completed.
    pub done: u64,
    /// Attempts failed and retried.
    pub retried: u64,
    /// Runs failed for good without a dead letter.
    pub failed: u64,
    /// Runs dead-lettered.
    pub dead: u64,
    /// Milliseconds spent.
    pub duration_ms: u64,
}

/// What a settle adds to a job name's counters (decided by the driver, in the settle itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterOutcome {
    /// Acked `done`.
    Done,
    /// A counted failure sent back to `ready`.
    Retried,
    /// Settled `failed`.
    Failed,
    /// Settled `dead` (also a burial by the claim).
    Dead,
}

impl CounterOutcome {
    /// What moving a row from `before` (with `attempt_before`) to `after` counts: only a row
    /// leaving `running` counts; a suspension, a cancel and an uncounted hand-back (a shed, a
    /// drain: the attempt number went back down) add nothing.
    pub fn of(
        before: JobState,
        attempt_before: u32,
        after: JobState,
        attempt_after: u32,
    ) -> Option<CounterOutcome> {
        if before != JobState::Running {
            return None;
        }
        match after {
            JobState::Done => Some(CounterOutcome::Done),
            JobState::Failed => Some(CounterOutcome::Failed),
            JobState::Dead => Some(CounterOutcome::Dead),
            JobState::Ready if attempt_after >= attempt_before => Some(CounterOutcome::Retried),
            _ => None,
        }
    }
}

/// The start of the `width_secs` bucket `at` falls in.
pub fn bucket_start(at: Timestamp, width_secs: u32) -> Timestamp {
    let secs = at.timestamp();
    let width = i64::from(width_secs.max(1));
    chrono::DateTime::from_timestamp(secs - secs.rem_euclid(width), 0).unwrap_or(at)
}

/// The tier a bucket of `bucket` belongs in at `now`: its width, or `None` past the last tier
/// (dropped).
pub fn tier_width_at(bucket: Timestamp, now: Timestamp) -> Option<u32> {
    let age = (now - bucket).to_std().unwrap_or_default();
    COUNTER_TIERS
        .iter()
        .find(|t| age < t.keep)
        .map(|t| t.bucket.as_secs() as u32)
}
/// Read one job's counter buckets.
#[derive(Debug, Clone, Copy)]
pub struct CountersParams<'a> {
    /// The name.
    pub name: &'a str,
    /// From when.
    pub since: Timestamp,
}

/// Sum every job's counters.
#[derive(Debug, Clone, Copy)]
pub struct CounterTotalsParams {
    /// From when.
    pub since: Timestamp,
}

/// Fold counter buckets into the next tier.
#[derive(Debug, Clone, Copy)]
pub struct CountersRollupParams {
    /// Now, on the injected clock.
    pub now: Timestamp,
}
