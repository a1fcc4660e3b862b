//! The operator surface: an optional sub-port of [`JobDriver`](super::JobDriver), like the lease
//! store and the scheduler store. A driver that has one answers
//! [`JobDriver::introspect`](super::JobDriver::introspect); without one every operator verb
//! answers `X_NOT_IMPLEMENTED`.
//!
//! It lists jobs page by page (keyset, newest first), removes, requeues and promotes them one by
//! one or in bounded bulk, pauses queues, lists live workers, and keeps per-job counters in
//! three tiers. Every verb that acts on a job appends a row to that job's history (who, when,
//! what: [`JobHistoryEntry`]) in the same statement or transaction as the act, so no act lands
//! without its row; [`JobIntrospection::job_history`] reads it back. Every driver implements it
//! with the same answers: the `introspect` area of the conformance suite runs its fixtures on
//! memory, Postgres and SQLite alike.
//!
//! The trait is here; the records and parameters it exchanges live beside it by subject (`list`,
//! `verbs`, `history`, `queues`, `workers`, `counters`, `cursor`), and the checks and refusals
//! every driver shares in `rules`. All are re-exported here.

mod counters;
mod cursor;
mod history;
mod list;
mod queues;
mod rules;
mod verbs;
mod workers;

pub use counters::{
    bucket_start, tier_width_at, CounterBucket, CounterOutcome, CounterTier, CounterTotals,
    CounterTotalsParams, CountersParams, CountersRollupParams, COUNTER_TIERS,
    MAX_COUNTER_ROWS_PER_JOB,
};
pub use cursor::JobCursor;
pub use history::{
    JobHistoryEntry, JobHistoryParams, JobVerb, BULK_DETAIL, DEFAULT_HISTORY_PAGE, MAX_HISTORY_PAGE,
};
pub use list::{
    JobListParams, JobPage, JobSummary, DEFAULT_JOB_PAGE, MAX_JOB_PAGE, PROGRESS_INTERVAL,
};
pub use queues::{QueuePause, QueuePauseParams, QueueResumeParams};
pub use rules::{
    check_bulk_state, check_history, check_list, duplicate, not_found, page_of, refusal,
    unknown_step, Bulk, Cursor,
};
pub use verbs::{
    BulkResult, JobBulkParams, JobPromoteParams, JobRemoveParams, JobRequeueParams, MAX_BULK_ROWS,
};
pub use workers::{
    queue_limits_spread, LimitsAnnounced, QueueLimitsSpread, WorkerAnnounce, WorkerForgetParams,
    WorkerListParams, WorkerQueueLimits, WorkerQueueRate, WorkerRow, WorkerSettings,
    MAX_WORKER_IN_FLIGHT,
};

use async_trait::async_trait;

use super::records::JobRecord;
use crate::error::JobError;

/// The operator's port.
#[async_trait]
pub trait JobIntrospection: Send + Sync {
    /// One page of jobs, newest first by `(created_at, id)`. `X_JOB_PAGE_INVALID` for a limit
    /// over [`MAX_JOB_PAGE`] (or zero) or a cursor this driver did not write (the message names
    /// `after` or `before`); `X_INVARIANT` for both cursors at once.
    async fn job_list(&self, params: &JobListParams) -> Result<JobPage, JobError>;

    /// Deletes one job and its steps, and records `remove` in its history (which stays until
    /// the purge takes it). `X_JOB_NOT_REMOVABLE` while it runs, `X_JOB_NOT_FOUND` for an
    /// unknown id. Answers the row as it was.
    async fn job_remove(&self, params: &JobRemoveParams) -> Result<JobRecord, JobError>;

    /// Re-queues ONE finished job (done, failed, dead or cancelled), in one statement: due now,
    /// attempts from zero, same run (its stored steps replay, except from `from_step` on);
    /// records `requeue` (or `requeue_from_step` with the step) in its history.
    /// `X_JOB_NOT_REQUEUEABLE` for a live job, `X_JOB_DUPLICATE` when a live job holds its key,
    /// `X_JOB_NOT_FOUND` for an unknown id, `X_INVARIANT` for a step the run does not have.
    async fn job_requeue(&self, params: &JobRequeueParams) -> Result<JobRecord, JobError>;

    /// Makes a job waiting on its run time (delayed, or ready and backing off) due now, and
    /// records `promote` in its history. `X_JOB_NOT_PROMOTABLE` when it is not waiting, `X_JOB_NOT_FOUND` for an unknown id.
    async fn job_promote(&self, params: &JobPromoteParams) -> Result<JobRecord, JobError>;

    /// Re-queues up to [`MAX_BULK_ROWS`] finished rows. A row whose key a live job holds stays
    /// put; of several finished rows sharing one key, the oldest is requeued. Each row moved
    /// records `requeue` (detail `bulk`) in its history.
    async fn job_requeue_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError>;

    /// Deletes up to [`MAX_BULK_ROWS`] rows (any state but `running`, which is refused with
    /// `X_JOB_NOT_REMOVABLE`) and their steps; each records `remove` (detail `bulk`).
    async fn job_remove_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError>;

    /// Makes up to [`MAX_BULK_ROWS`] waiting rows due now (`state` delayed or ready; another
    /// state is refused with `X_JOB_NOT_PROMOTABLE`). `remaining`: rows still waiting. Each
    /// row moved records `promote` (detail `bulk`).
    async fn job_promote_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError>;

    /// One job's history, newest first by `(at, insertion)`, at most `limit` rows:
    /// `X_JOB_PAGE_INVALID` for a limit over [`MAX_HISTORY_PAGE`] (or zero). An id with no
    /// history (or none of `tenant_id`'s) answers no rows.
    async fn job_history(
        &self,
        params: &JobHistoryParams,
    ) -> Result<Vec<JobHistoryEntry>, JobError>;

    /// Pauses a queue: no worker claims from it from its next claim on; enqueues still land.
    /// The pause row keeps the actor (`paused_by`); a second pause keeps the first's row.
    async fn queue_pause(&self, params: &QueuePauseParams<'_>) -> Result<(), JobError>;

    /// Resumes a queue (and announces it to idle workers): `true` when it was paused.
    async fn queue_resume(&self, params: &QueueResumeParams<'_>) -> Result<bool, JobError>;

    /// The paused queues, sorted.
    async fn queue_paused(&self) -> Result<Vec<QueuePause>, JobError>;

    /// Writes (or refreshes) a worker's registry row.
    async fn worker_announce(&self, announce: &WorkerAnnounce) -> Result<(), JobError>;

    /// Deletes a worker's registry row (a graceful stop).
    async fn worker_forget(&self, params: &WorkerForgetParams<'_>) -> Result<(), JobError>;

    /// The live workers (rows not expired at `now`), sorted by id.
    async fn worker_list(&self, params: &WorkerListParams) -> Result<Vec<WorkerRow>, JobError>;

    /// One job name's buckets since `since`, oldest first.
    async fn counters(&self, params: &CountersParams<'_>) -> Result<Vec<CounterBucket>, JobError>;

    /// Every job name's counters since `since`, summed, sorted by name.
    async fn counter_totals(
        &self,
        params: &CounterTotalsParams,
    ) -> Result<Vec<CounterTotals>, JobError>;

    /// Folds buckets past their tier into the next (and drops those past the last).
    /// Idempotent; answers the rows it rewrote.
    async fn counters_rollup(&self, params: &CountersRollupParams) -> Result<u64, JobError>;
}
