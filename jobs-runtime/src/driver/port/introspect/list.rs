//! Listing jobs: which jobs a page holds, the row a page shows (no input), the page and its
//! bounds.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::driver::records::{JobId, JobRecord, JobState, Progress, RunId};

/// The most rows one [`JobIntrospection::job_list`](super::JobIntrospection::job_list) page
/// holds; a larger `limit` is refused (`X_JOB_PAGE_INVALID`).
pub const MAX_JOB_PAGE: u32 = 200;
/// The page size when none is asked for.
pub const DEFAULT_JOB_PAGE: u32 = 100;
/// A run's progress is written at most once per this interval (plus once before it settles).
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// Which jobs a [`JobIntrospection::job_list`](super::JobIntrospection::job_list) page holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobListParams {
    /// Only this queue.
    pub queue: Option<String>,
    /// Only this job name.
    pub name: Option<String>,
    /// Only this state.
    pub state: Option<JobState>,
    /// Only this tenant.
    pub tenant_id: Option<String>,
    /// Only ids starting with this (lower-case hex with dashes, as printed).
    pub id_prefix: Option<String>,
    /// Created at or after.
    pub created_from: Option<Timestamp>,
    /// Created before.
    pub created_to: Option<Timestamp>,
    /// Rows per page: [`DEFAULT_JOB_PAGE`] when `None`, at most [`MAX_JOB_PAGE`].
    pub limit: Option<u32>,
    /// The next (older) page: the rows after this cursor (the previous page's `after`).
    pub after: Option<String>,
    /// The previous (newer) page: the rows before this cursor (the page's `before`), still
    /// newest first.
    pub before: Option<String>,
}

/// One job in a list: the row without its input (a page never carries payloads).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSummary {
    /// The job.
    pub id: JobId,
    /// The run.
    pub run_id: RunId,
    /// Durable name.
    pub name: String,
    /// Queue.
    pub queue: String,
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
    /// Its priority (higher is claimed first within its tenant's turn).
    #[serde(default)]
    pub priority: i16,
    /// Created.
    pub created_at: Timestamp,
    /// Last written.
    pub updated_at: Timestamp,
    /// The last failure's message (never a payload), so a list shows why without a read per row.
    pub last_error: Option<String>,
    /// The last failure's code.
    pub last_error_code: Option<String>,
    /// Last reported progress.
    pub progress: Option<Progress>,
}

impl From<&JobRecord> for JobSummary {
    fn from(r: &JobRecord) -> Self {
        JobSummary {
            id: r.id,
            run_id: r.run_id,
            name: r.name.clone(),
            queue: r.queue.clone(),
            tenant_id: r.tenant_id.clone(),
            state: r.state,
            attempt: r.attempt,
            max_attempts: r.max_attempts,
            run_at: r.run_at,
            priority: r.priority,
            created_at: r.created_at,
            updated_at: r.updated_at,
            last_error: r.last_error.clone(),
            last_error_code: r.last_error_code.clone(),
            progress: r.progress.clone(),
        }
    }
}

/// One page of jobs, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobPage {
    /// The rows, newest first by `(created_at, id)`.
    pub jobs: Vec<JobSummary>,
    /// Pass as `after` for the next (older) page; `None`: this is the last page.
    pub after: Option<String>,
    /// Pass as `before` for the previous (newer) page; `None`: this is the first page.
    pub before: Option<String>,
}
