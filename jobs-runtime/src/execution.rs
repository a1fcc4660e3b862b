//! What one attempt came to, as the worker reports it: [`JobExecution`] and its
//! [`ExecutionOutcome`]. A leaf module, so telemetry can read it without reaching the worker.

use crate::clock::Timestamp;
use crate::driver::{ClaimedJob, JobId, RunId};
use crate::error::ErrorCode;

/// How an attempt ended, from the worker's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionOutcome {
    /// Acked `done`.
    Completed,
    /// Parked by a sleep or an event wait; not an attempt.
    Suspended,
    /// Failed with attempts left; back to `ready` after a backoff.
    Retried,
    /// Failed for good; dead-lettered.
    DeadLettered,
    /// Failed for good with `dead_letter = false`; row `failed`.
    Dropped,
    /// Cut by a drain; handed back uncounted.
    Interrupted,
    /// The claim was lost (cancelled, or re-delivered after a lapse); nothing settled.
    LeaseLost,
    /// No job of that name is registered in this worker; handed back uncounted for later.
    Deferred,
    /// Over a per-process limit or a fleet concurrency cap; handed back uncounted.
    Shed,
    /// `when_busy = fail` over a busy key: settled `failed` (outcome `refused`), uncounted.
    Refused,
    /// Reached after its `expires_in` before it started: settled `failed` (outcome `expired`,
    /// `X_JOB_EXPIRED`), uncounted, never run.
    Expired,
}

/// What one attempt did.
#[derive(Debug, Clone)]
pub struct JobExecution {
    /// The job.
    pub job_id: JobId,
    /// The run.
    pub run_id: RunId,
    /// The job's name.
    pub name: String,
    /// The attempt's number.
    pub attempt: u32,
    /// How it ended.
    pub outcome: ExecutionOutcome,
    /// The error, summarised, when it failed.
    pub error: Option<String>,
    /// The error's code.
    pub code: Option<ErrorCode>,
    /// When the job is due again (a retry or a wake).
    pub resume_at: Option<Timestamp>,
    /// `true` when the `on_settled` hook failed all its tries (`X_JOB_ON_SETTLED_FAILED`).
    pub on_settled_failed: bool,
}

impl JobExecution {
    pub(crate) fn new(job: &ClaimedJob, outcome: ExecutionOutcome) -> Self {
        JobExecution {
            job_id: job.id,
            run_id: job.run_id,
            name: job.name.to_string(),
            attempt: job.attempt,
            outcome,
            error: None,
            code: None,
            resume_at: None,
            on_settled_failed: false,
        }
    }
}
