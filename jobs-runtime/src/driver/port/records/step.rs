//! A run's durable steps: the record, its status, an open event wait, the fence on a step
//! write, and the reads and writes of step records.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

use super::{ClaimIdentity, EventSince, JobId, RunId};

/// A step's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    /// Ran; its output is stored.
    Completed,
    /// A `sleep` that has not woken yet.
    Sleeping,
    /// A `wait_for_event` still open.
    Waiting,
    /// Its last execution failed.
    Failed,
}

impl StepStatus {
    /// The status as stored.
    pub const fn as_str(self) -> &'static str {
        match self {
            StepStatus::Completed => "completed",
            StepStatus::Sleeping => "sleeping",
            StepStatus::Waiting => "waiting",
            StepStatus::Failed => "failed",
        }
    }

    /// Reads a stored status, refusing an unknown one (never re-runs a step on a guess).
    pub fn parse(stored: &str) -> Result<StepStatus, JobError> {
        [
            StepStatus::Completed,
            StepStatus::Sleeping,
            StepStatus::Waiting,
            StepStatus::Failed,
        ]
        .into_iter()
        .find(|s| s.as_str() == stored)
        .ok_or_else(|| {
            JobError::new(
                ErrorCode::StepRecordInvalid,
                format!("a step record carries the unknown status `{stored}`"),
            )
        })
    }
}

/// An open `wait_for_event`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaitSpec {
    /// The event name.
    pub event: String,
    /// The correlation key.
    pub key: String,
    /// When the wait gives up.
    pub deadline: Timestamp,
    /// The wait's own line: only events after it are the wait's.
    pub since: EventSince,
}

/// One durable step of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The run.
    pub run_id: RunId,
    /// The step's name, unique in the run.
    pub name: String,
    /// Status.
    pub status: StepStatus,
    /// The output (a completed step), or the event payload (a completed wait; `null` on timeout).
    pub output: Option<serde_json::Value>,
    /// The last failure, summarised.
    pub error: Option<String>,
    /// Executions of the step's closure that reached the store.
    pub attempts: u32,
    /// When a sleep wakes.
    pub wake_at: Option<Timestamp>,
    /// An open wait.
    pub wait: Option<WaitSpec>,
    /// Last written.
    pub updated_at: Timestamp,
}

/// The fence on a step write: the run's job must still be running under this claim.
#[derive(Debug, Clone)]
pub struct StepFence {
    /// The job.
    pub job_id: JobId,
    /// The claim.
    pub by: ClaimIdentity,
}

/// Read a run's step records.
#[derive(Debug, Clone, Copy)]
pub struct StepListParams {
    /// The run.
    pub run_id: RunId,
}

/// Write one step record, fenced on the claim.
#[derive(Debug, Clone, Copy)]
pub struct StepPutParams<'a> {
    /// The step record.
    pub record: &'a StepRecord,
    /// The claim the write is fenced on.
    pub fence: &'a StepFence,
}
