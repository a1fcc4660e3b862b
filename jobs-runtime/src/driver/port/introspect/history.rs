//! A job's history: what an operator did to it, one row per act, and the read of it.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::driver::records::JobId;

/// The most rows one [`JobIntrospection::job_history`](super::JobIntrospection::job_history)
/// read answers; a larger `limit` is refused (`X_JOB_PAGE_INVALID`). The memory driver keeps
/// this many rows per job.
pub const MAX_HISTORY_PAGE: u32 = 200;
/// The history rows a read answers when no limit is asked for.
pub const DEFAULT_HISTORY_PAGE: u32 = 50;

/// What an operator did to a job: the verbs its history records
/// ([`JobHistoryEntry::verb`] holds [`JobVerb::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobVerb {
    /// Enqueued: not a history row, but the job's own `created_at` and `actor`, which
    /// [`Operator::history`](crate::operator::Operator::history) lists as the oldest entry.
    Enqueue,
    /// Requeued (retried), every stored step replaying; a bulk requeue's rows carry the detail
    /// `bulk`.
    Requeue,
    /// Requeued from a step: the detail names the step.
    RequeueFromStep,
    /// Cancelled.
    Cancel,
    /// Made due now.
    Promote,
    /// Deleted, with its steps: the row stays in the history until the purge takes it.
    Remove,
}

impl JobVerb {
    /// Every verb.
    pub const ALL: [JobVerb; 6] = [
        JobVerb::Enqueue,
        JobVerb::Requeue,
        JobVerb::RequeueFromStep,
        JobVerb::Cancel,
        JobVerb::Promote,
        JobVerb::Remove,
    ];

    /// The stored spelling: `enqueue`, `requeue`, `requeue_from_step`, `cancel`, `promote`,
    /// `remove`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobVerb::Enqueue => "enqueue",
            JobVerb::Requeue => "requeue",
            JobVerb::RequeueFromStep => "requeue_from_step",
            JobVerb::Cancel => "cancel",
            JobVerb::Promote => "promote",
            JobVerb::Remove => "remove",
        }
    }

    /// The verb a stored spelling names (`None` for one this build does not know).
    pub fn parse(text: &str) -> Option<JobVerb> {
        JobVerb::ALL.into_iter().find(|v| v.as_str() == text)
    }
}

/// The detail a bulk verb writes on each row it records.
pub const BULK_DETAIL: &str = "bulk";

/// One row of a job's history: who did what to it, when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobHistoryEntry {
    /// The job.
    pub job_id: JobId,
    /// When (the `now` of the act).
    pub at: Timestamp,
    /// Who: the actor the act named (an operator's identity), if any.
    pub actor: Option<String>,
    /// What: a [`JobVerb`]'s stored spelling (a newer build may write one this build does not
    /// know, so it is kept as text).
    pub verb: String,
    /// The step a `requeue_from_step` names; `bulk` for a row a bulk verb wrote.
    pub detail: Option<String>,
}

/// Read one job's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobHistoryParams {
    /// The job (a removed job's rows are kept until the purge takes them).
    pub id: JobId,
    /// Only rows written while the job belonged to this tenant (a tenant-scoped operator's
    /// read); `None`: every row.
    pub tenant_id: Option<String>,
    /// Rows: [`DEFAULT_HISTORY_PAGE`] when `None`, at most [`MAX_HISTORY_PAGE`].
    pub limit: Option<u32>,
}
