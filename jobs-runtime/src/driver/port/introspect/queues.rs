//! Pausing and resuming a queue, and the pause an operator reads.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;

/// A paused queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuePause {
    /// The queue.
    pub queue: String,
    /// Since when.
    pub paused_at: Timestamp,
    /// Who paused it, when the pause named an actor.
    #[serde(default)]
    pub paused_by: Option<String>,
}
/// Pause a queue.
#[derive(Debug, Clone, Copy)]
pub struct QueuePauseParams<'a> {
    /// The queue.
    pub queue: &'a str,
    /// Who asks, kept on the pause row (`paused_by`).
    pub actor: Option<&'a str>,
    /// Now, on the injected clock.
    pub now: Timestamp,
}

/// Resume a paused queue.
#[derive(Debug, Clone, Copy)]
pub struct QueueResumeParams<'a> {
    /// The queue.
    pub queue: &'a str,
    /// Now, on the injected clock.
    pub now: Timestamp,
}
