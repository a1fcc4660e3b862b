//! The verbs that act on jobs: remove, requeue and promote, one job at a time or in bounded
//! bulk, and what a bulk call did.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::driver::records::{JobId, JobState};

/// The most rows one bulk verb moves per call; call again while `remaining > 0`.
pub const MAX_BULK_ROWS: u32 = 1_000;

/// Delete a job that is not running, and its steps.
#[derive(Debug, Clone)]
pub struct JobRemoveParams {
    /// The job.
    pub id: JobId,
    /// Who asks, recorded in the job's history.
    pub actor: Option<String>,
    /// Now, on the injected clock (the history row's time).
    pub now: Timestamp,
}

/// Make a waiting job due now.
#[derive(Debug, Clone)]
pub struct JobPromoteParams {
    /// The job.
    pub id: JobId,
    /// Who asks, recorded in the job's history.
    pub actor: Option<String>,
    /// Now, on the injected clock.
    pub now: Timestamp,
}
/// Re-queue one finished job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRequeueParams {
    /// The job.
    pub id: JobId,
    /// Run again from this step: it and every step written after it are forgotten, so they run
    /// again; the steps before it replay from the store. `None`: every stored step replays.
    pub from_step: Option<String>,
    /// Who asks (an operator's identity, e.g. `ops@example.com` or `cli:alice`), recorded in
    /// the job's history; `None`: no one named.
    pub actor: Option<String>,
    /// Now.
    pub now: Timestamp,
}

/// Which rows a bulk verb moves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobBulkParams {
    /// The state the rows are in (requeue: a finished state; promote: `delayed` or `ready`;
    /// remove: anything but `running`).
    pub state: JobState,
    /// Only this queue.
    pub queue: Option<String>,
    /// Only this job name.
    pub name: Option<String>,
    /// Only this tenant.
    pub tenant_id: Option<String>,
    /// Who asks, recorded in the history of every job the verb moves (one row each).
    #[serde(default)]
    pub actor: Option<String>,
    /// Now.
    pub now: Timestamp,
}

/// What a bulk verb did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkResult {
    /// Rows moved by this call (at most [`MAX_BULK_ROWS`]).
    pub affected: u64,
    /// Rows a second call could still move (rows it can never move are not counted, so
    /// "call until zero" terminates).
    pub remaining: u64,
}
