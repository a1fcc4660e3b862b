//! The writes a claimed job's attempt makes, each fenced on its claim: ack, nack (and where it
//! sends the job), heartbeat and progress.

use std::time::Duration;

use crate::clock::Timestamp;

use super::{ClaimIdentity, JobId, JobState, Progress};

/// Settles a job `done`.
#[derive(Debug, Clone)]
pub struct AckParams {
    /// The job.
    pub job_id: JobId,
    /// The claim it must still be under.
    pub by: ClaimIdentity,
    /// The result to keep with the job ([`JobRecord::result`](super::JobRecord::result)), for
    /// a job declared `keep_result`; `None` keeps none. Written by the same fenced statement,
    /// transaction or script as the settle, so an ack that does not land stores nothing.
    /// Checked before it gets here (`jobs::limits`); `Some(Value::Null)` is a result (a body
    /// that returned `()` or `None`), kept as JSON `null`.
    pub result: Option<serde_json::Value>,
    /// The clock's now.
    pub now: Timestamp,
}

/// Where a nack sends a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NackTarget {
    /// Back to `ready` at `run_at` (a retry, a shed, an interrupted attempt).
    Retry,
    /// `suspended` until `run_at` (a sleep or an event wait).
    Park,
    /// `failed` for good.
    Fail,
    /// `dead`: the dead-letter queue.
    DeadLetter,
}

impl NackTarget {
    /// The state the row lands in.
    pub fn state(self) -> JobState {
        match self {
            NackTarget::Retry => JobState::Ready,
            NackTarget::Park => JobState::Suspended,
            NackTarget::Fail => JobState::Failed,
            NackTarget::DeadLetter => JobState::Dead,
        }
    }
}

/// Settles a job anywhere but `done`.
#[derive(Debug, Clone)]
pub struct NackParams {
    /// The job.
    pub job_id: JobId,
    /// The claim it must still be under.
    pub by: ClaimIdentity,
    /// Where it goes.
    pub target: NackTarget,
    /// When it is due again (for `Retry` and `Park`).
    pub run_at: Timestamp,
    /// `false`: the attempt is handed back and its number presented again.
    pub counts_as_attempt: bool,
    /// The error summary to keep (never a payload).
    pub error: Option<String>,
    /// The error's code.
    pub error_code: Option<String>,
    /// The clock's now.
    pub now: Timestamp,
}

/// Extends a claim.
#[derive(Debug, Clone)]
pub struct HeartbeatParams {
    /// The job.
    pub job_id: JobId,
    /// The claim it must still be under.
    pub by: ClaimIdentity,
    /// The new window from `now`.
    pub visibility_timeout: Duration,
    /// The clock's now.
    pub now: Timestamp,
}

/// Records progress.
#[derive(Debug, Clone)]
pub struct ProgressParams {
    /// The job.
    pub job_id: JobId,
    /// The claim it must still be under.
    pub by: ClaimIdentity,
    /// The progress.
    pub progress: Progress,
    /// The clock's now.
    pub now: Timestamp,
}
