//! Counts per queue and state, and the read that asks for them.

use serde::{Deserialize, Serialize};

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

/// Count jobs per queue and state.
#[derive(Debug, Clone, Copy)]
pub struct QueueStatsParams {
    /// Now, on the injected clock.
    pub now: Timestamp,
}
