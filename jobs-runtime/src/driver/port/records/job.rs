//! The job row and its state: what an operator reads, and the reads, cancel and purge of one
//! job or of finished rows.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

use super::{JobId, RunId};

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Due now (or backing off with a `run_at` in the future after a failure).
    Ready,
    /// Enqueued with a `run_at` in the future.
    Delayed,
    /// Claimed by a worker.
    Running,
    /// Parked by `sleep` or `wait_for_event` until its `run_at`, or until an event wakes it.
    Suspended,
    /// Completed.
    Done,
    /// Failed for good without a dead letter (`dead_letter = false`, or refused).
    Failed,
    /// Dead-lettered.
    Dead,
    /// Cancelled by an operator.
    Cancelled,
}

impl JobState {
    /// Every state.
    pub const ALL: [JobState; 8] = [
        JobState::Ready,
        JobState::Delayed,
        JobState::Running,
        JobState::Suspended,
        JobState::Done,
        JobState::Failed,
        JobState::Dead,
        JobState::Cancelled,
    ];

    /// The states that hold an idempotency key.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            JobState::Ready | JobState::Delayed | JobState::Running | JobState::Suspended
        )
    }

    /// The state as stored.
    pub const fn as_str(self) -> &'static str {
        match self {
            JobState::Ready => "ready",
            JobState::Delayed => "delayed",
            JobState::Running => "running",
            JobState::Suspended => "suspended",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Dead => "dead",
            JobState::Cancelled => "cancelled",
        }
    }

    /// Reads a stored state, refusing one this build does not know (`X_JOB_ROW_STATUS_UNKNOWN`).
    pub fn parse(stored: &str) -> Result<JobState, JobError> {
        JobState::ALL
            .into_iter()
            .find(|s| s.as_str() == stored)
            .ok_or_else(|| {
                JobError::new(
                    ErrorCode::JobRowStatusUnknown,
                    format!("a job row carries the unknown state `{stored}`"),
                )
            })
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How far a run has got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// Units done.
    pub done: u64,
    /// Units in all.
    pub total: u64,
    /// A short note (never a payload).
    pub note: Option<String>,
}

/// A job row as the operator sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The job.
    pub id: JobId,
    /// The run.
    pub run_id: RunId,
    /// Durable name.
    pub name: String,
    /// Queue.
    pub queue: String,
    /// The stored input.
    pub input: serde_json::Value,
    /// The idempotency key.
    pub idempotency_key: String,
    /// Tenant.
    pub tenant_id: Option<String>,
    /// State.
    pub state: JobState,
    /// Attempts started and counted.
    pub attempt: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// When it is (or was) due.
    pub run_at: Timestamp,
    /// Its priority ([`MIN_PRIORITY`](super::MIN_PRIORITY)..=[`MAX_PRIORITY`](super::MAX_PRIORITY)):
    /// a higher one is claimed first within its tenant's turn.
    #[serde(default)]
    pub priority: i16,
    /// Created.
    pub created_at: Timestamp,
    /// Last written.
    pub updated_at: Timestamp,
    /// The last failure, summarised (code and message, never a payload). Cleared when the job
    /// completes (`done`): an earlier attempt's failure, or an interruption such as
    /// `X_DRAINING`, is no error of a job that succeeded; its step records keep their own.
    pub last_error: Option<String>,
    /// The last failure's code; cleared with `last_error` when the job completes.
    pub last_error_code: Option<String>,
    /// The worker holding the claim.
    pub claimed_by: Option<String>,
    /// The claim ordinal.
    pub claims: i64,
    /// Until when the claim holds.
    pub visible_at: Option<Timestamp>,
    /// Last reported progress.
    pub progress: Option<Progress>,
    /// The enqueue's W3C traceparent.
    pub traceparent: Option<String>,
    /// Who asked for the job, when its enqueue named one.
    pub actor: Option<String>,
    /// When a job enqueued with a unique period stops holding its key once it is no longer live
    /// (its creation plus the period, [`EnqueueRequest::unique_for`](super::EnqueueRequest::unique_for)).
    /// `None`: no period, or one that lapsed and was cleared by a later enqueue of the key
    /// (a lapsed one may also still show here; it holds nothing, see [`holds_key`](super::holds_key)).
    #[serde(default)]
    pub unique_until: Option<Timestamp>,
    /// The result a job declared `keep_result` was acked with (its body's `Ok` value as JSON),
    /// kept while the row is; `None` for every other job, and until the job is `done`. A
    /// requeue clears it with the rest of the finished run's state. `Some(Value::Null)` is a
    /// kept `null` (a body returning `()` or `None`).
    #[serde(default)]
    pub result: Option<serde_json::Value>,
}

/// Deletes finished rows past their retention window, in one bounded batch.
#[derive(Debug, Clone)]
pub struct JobPurgeParams {
    /// `done` rows settled before this go.
    pub done_before: Timestamp,
    /// `failed`, `dead` and `cancelled` rows settled before this go.
    pub finished_before: Timestamp,
    /// Rows per state group in this batch, at most.
    pub limit: u32,
}

/// Read one job.
#[derive(Debug, Clone, Copy)]
pub struct JobGetParams {
    /// The job.
    pub id: JobId,
}

/// Cancel a live job.
#[derive(Debug, Clone)]
pub struct JobCancelParams {
    /// The job.
    pub id: JobId,
    /// Who asks, recorded in the job's history (`cancel`) by the same transaction.
    pub actor: Option<String>,
    /// Why, recorded as the detail of the job's `cancel` history row (not of its children's);
    /// checked by `limits.rs` before any driver is reached.
    pub reason: Option<String>,
    /// Now, on the injected clock.
    pub now: Timestamp,
}
