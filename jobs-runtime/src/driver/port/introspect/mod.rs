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

mod cursor;

pub use cursor::JobCursor;

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::records::{JobId, JobRecord, JobState, Progress, RunId};
use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

/// The most rows one [`JobIntrospection::job_list`] page holds; a larger `limit` is refused
/// (`X_JOB_PAGE_INVALID`).
pub const MAX_JOB_PAGE: u32 = 200;
/// The page size when none is asked for.
pub const DEFAULT_JOB_PAGE: u32 = 100;
/// The most rows one bulk verb moves per call; call again while `remaining > 0`.
pub const MAX_BULK_ROWS: u32 = 1_000;
/// The most in-flight job ids a worker registry row carries.
pub const MAX_WORKER_IN_FLIGHT: usize = 100;
/// A run's progress is written at most once per this interval (plus once before it settles).
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);
/// The most rows one [`JobIntrospection::job_history`] read answers; a larger `limit` is
/// refused (`X_JOB_PAGE_INVALID`). The memory driver keeps this many rows per job.
pub const MAX_HISTORY_PAGE: u32 = 200;
/// The history rows a read answers when no limit is asked for.
pub const DEFAULT_HISTORY_PAGE: u32 = 50;

/// One counter tier: buckets of `bucket` kept for `keep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterTier {
    /// The bucket width.
    pub bucket: Duration,
    /// How long buckets of this width are kept before they fold into the next tier.
    pub keep: Duration,
}

/// The counter tiers: 1-minute buckets for 24 hours, 5-minute buckets for 7 days, 1-hour
/// buckets for 30 days: at most [`MAX_COUNTER_ROWS_PER_JOB`] rows per job name once rolled up.
pub const COUNTER_TIERS: [CounterTier; 3] = [
    CounterTier {
        bucket: Duration::from_secs(60),
        keep: Duration::from_secs(24 * 3600),
    },
    CounterTier {
        bucket: Duration::from_secs(5 * 60),
        keep: Duration::from_secs(7 * 24 * 3600),
    },
    CounterTier {
        bucket: Duration::from_secs(3600),
        keep: Duration::from_secs(30 * 24 * 3600),
    },
];

/// 1,440 + 2,016 + 720.
pub const MAX_COUNTER_ROWS_PER_JOB: usize = 4_176;

/// Which jobs a [`JobIntrospection::job_list`] page holds.
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
#[cfg_attr(feature = "sql", derive(sqlx::FromRow))]
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
    #[cfg_attr(feature = "sql", sqlx(try_from = "i32"))]
    pub attempt: u32,
    /// Attempts allowed.
    #[cfg_attr(feature = "sql", sqlx(try_from = "i32"))]
    pub max_attempts: u32,
    /// When it is (or was) due.
    pub run_at: Timestamp,
    /// Created.
    pub created_at: Timestamp,
    /// Last written.
    pub updated_at: Timestamp,
    /// The last failure's code.
    pub last_error_code: Option<String>,
    /// Last reported progress.
    #[cfg_attr(feature = "sql", sqlx(json(nullable)))]
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
            created_at: r.created_at,
            updated_at: r.updated_at,
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
#[cfg_attr(feature = "sql", derive(sqlx::FromRow))]
pub struct BulkResult {
    /// Rows moved by this call (at most [`MAX_BULK_ROWS`]).
    #[cfg_attr(feature = "sql", sqlx(try_from = "i64"))]
    pub affected: u64,
    /// Rows a second call could still move (rows it can never move are not counted, so
    /// "call until zero" terminates).
    #[cfg_attr(feature = "sql", sqlx(try_from = "i64"))]
    pub remaining: u64,
}

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
#[cfg_attr(feature = "sql", derive(sqlx::FromRow))]
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

/// What a worker announces (and re-announces at every registry heartbeat).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerAnnounce {
    /// The worker's id.
    pub id: String,
    /// The host it runs on.
    pub host: String,
    /// When it started.
    pub started_at: Timestamp,
    /// The queues it serves.
    pub queues: Vec<String>,
    /// Its slots, all queues together.
    pub slots: u32,
    /// Jobs it runs now (at most [`MAX_WORKER_IN_FLIGHT`] ids are kept).
    pub in_flight: Vec<JobId>,
    /// How many it runs now (may exceed the ids kept).
    pub in_flight_count: u32,
    /// The row expires this long after `now` without another heartbeat.
    pub ttl: Duration,
    /// Now.
    pub now: Timestamp,
}

/// A live worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerRow {
    /// The worker's id.
    pub id: String,
    /// The host it runs on.
    pub host: String,
    /// When it started.
    pub started_at: Timestamp,
    /// The queues it serves.
    pub queues: Vec<String>,
    /// Its slots.
    pub slots: u32,
    /// Jobs it ran at its last heartbeat (at most [`MAX_WORKER_IN_FLIGHT`]).
    pub in_flight: Vec<JobId>,
    /// How many it ran at its last heartbeat.
    pub in_flight_count: u32,
    /// Its last heartbeat.
    pub heartbeat_at: Timestamp,
    /// When the row expires without another one.
    pub expires_at: Timestamp,
}

/// One counter bucket of one job name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterBucket {
    /// The bucket's start.
    pub bucket: Option<Timestamp>,
    /// The bucket's width in seconds (60, 300 or 3600).
    pub width_secs: u32,
    /// Runs completed.
    pub done: u64,
    /// Attempts failed and retried.
    pub retried: u64,
    /// Runs failed for good without a dead letter.
    pub failed: u64,
    /// Runs dead-lettered.
    pub dead: u64,
    /// Time spent by the completed and failed attempts counted here, in milliseconds.
    pub duration_ms: u64,
}

/// One job name's counters since a time, summed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterTotals {
    /// The job name.
    pub name: String,
    /// Runs completed.
    pub done: u64,
    /// Attempts failed and retried.
    pub retried: u64,
    /// Runs failed for good without a dead letter.
    pub failed: u64,
    /// Runs dead-lettered.
    pub dead: u64,
    /// Milliseconds spent.
    pub duration_ms: u64,
}

/// What a settle adds to a job name's counters (decided by the driver, in the settle itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterOutcome {
    /// Acked `done`.
    Done,
    /// A counted failure sent back to `ready`.
    Retried,
    /// Settled `failed`.
    Failed,
    /// Settled `dead` (also a burial by the claim).
    Dead,
}

impl CounterOutcome {
    /// What moving a row from `before` (with `attempt_before`) to `after` counts: only a row
    /// leaving `running` counts; a suspension, a cancel and an uncounted hand-back (a shed, a
    /// drain: the attempt number went back down) add nothing.
    pub fn of(
        before: JobState,
        attempt_before: u32,
        after: JobState,
        attempt_after: u32,
    ) -> Option<CounterOutcome> {
        if before != JobState::Running {
            return None;
        }
        match after {
            JobState::Done => Some(CounterOutcome::Done),
            JobState::Failed => Some(CounterOutcome::Failed),
            JobState::Dead => Some(CounterOutcome::Dead),
            JobState::Ready if attempt_after >= attempt_before => Some(CounterOutcome::Retried),
            _ => None,
        }
    }
}

/// The start of the `width_secs` bucket `at` falls in.
pub fn bucket_start(at: Timestamp, width_secs: u32) -> Timestamp {
    let secs = at.timestamp();
    let width = i64::from(width_secs.max(1));
    chrono::DateTime::from_timestamp(secs - secs.rem_euclid(width), 0).unwrap_or(at)
}

/// The tier a bucket of `bucket` belongs in at `now`: its width, or `None` past the last tier
/// (dropped).
pub fn tier_width_at(bucket: Timestamp, now: Timestamp) -> Option<u32> {
    let age = (now - bucket).to_std().unwrap_or_default();
    COUNTER_TIERS
        .iter()
        .find(|t| age < t.keep)
        .map(|t| t.bucket.as_secs() as u32)
}

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

/// Checks a history read's bound: the limit to use.
pub(crate) fn check_history(params: &JobHistoryParams) -> Result<u32, JobError> {
    let limit = params.limit.unwrap_or(DEFAULT_HISTORY_PAGE);
    if limit == 0 || limit > MAX_HISTORY_PAGE {
        return Err(JobError::new(
            ErrorCode::JobPageInvalid,
            format!("a history read holds 1 to {MAX_HISTORY_PAGE} rows, not {limit}"),
        ));
    }
    Ok(limit)
}

/// Checks a list's bounds and cursors: the limit to use and the decoded cursor.
pub(crate) fn check_list(params: &JobListParams) -> Result<(u32, Option<Cursor>), JobError> {
    let limit = params.limit.unwrap_or(DEFAULT_JOB_PAGE);
    if limit == 0 || limit > MAX_JOB_PAGE {
        return Err(JobError::new(
            ErrorCode::JobPageInvalid,
            format!("a page holds 1 to {MAX_JOB_PAGE} rows, not {limit}"),
        ));
    }
    let cursor = match (&params.after, &params.before) {
        (Some(_), Some(_)) => {
            return Err(JobError::new(
                ErrorCode::Invariant,
                "a page is read either `after` or `before` a cursor, not both",
            ))
        }
        (Some(after), None) => Some(Cursor::After(JobCursor::parse(after, "after")?)),
        (None, Some(before)) => Some(Cursor::Before(JobCursor::parse(before, "before")?)),
        (None, None) => None,
    };
    Ok((limit, cursor))
}

/// A decoded list cursor.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cursor {
    After(JobCursor),
    Before(JobCursor),
}

/// Builds a page from the rows read (newest first), `limit` asked, and the cursor used.
pub(crate) fn page_of(jobs: Vec<JobSummary>, limit: u32, cursor: Option<Cursor>) -> JobPage {
    let full = jobs.len() as u32 >= limit;
    let first = jobs.first().map(|j| JobCursor::of(j).to_string());
    let last = jobs.last().map(|j| JobCursor::of(j).to_string());
    let (after, before) = match cursor {
        None => (last.filter(|_| full), None),
        Some(Cursor::After(_)) => (last.filter(|_| full), first),
        Some(Cursor::Before(_)) => (last, first.filter(|_| full)),
    };
    JobPage {
        jobs,
        after,
        before,
    }
}

/// Bulk verbs check the state they were asked to move.
pub(crate) fn check_bulk_state(verb: Bulk, state: JobState) -> Result<(), JobError> {
    let (ok, code, what) = match verb {
        Bulk::Requeue => (
            !state.is_live(),
            ErrorCode::JobNotRequeueable,
            "only done, failed, dead or cancelled rows can be requeued",
        ),
        Bulk::Remove => (
            state != JobState::Running,
            ErrorCode::JobNotRemovable,
            "running rows cannot be removed; cancel them first",
        ),
        Bulk::Promote => (
            matches!(state, JobState::Delayed | JobState::Ready),
            ErrorCode::JobNotPromotable,
            "only delayed or ready (backing off) rows can be promoted",
        ),
    };
    if ok {
        Ok(())
    } else {
        Err(JobError::new(code, format!("{what}, not `{state}` rows")))
    }
}

/// The three bulk verbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bulk {
    Requeue,
    Remove,
    Promote,
}

/// The refusal for an id the queue does not hold.
pub(crate) fn not_found(id: JobId) -> JobError {
    JobError::new(ErrorCode::JobNotFound, format!("no job with id {id}"))
}

/// Why a job could not be requeued, removed or promoted, from its current row.
pub(crate) fn refusal(verb: Bulk, row: Option<&JobRecord>, id: JobId) -> JobError {
    let Some(row) = row else {
        return not_found(id);
    };
    match verb {
        Bulk::Requeue => JobError::new(
            ErrorCode::JobNotRequeueable,
            format!("job {id} is {}: only finished jobs are requeued", row.state),
        ),
        Bulk::Remove => JobError::new(
            ErrorCode::JobNotRemovable,
            format!("job {id} is running: cancel it first"),
        ),
        Bulk::Promote => JobError::new(
            ErrorCode::JobNotPromotable,
            format!("job {id} is {}, not waiting on its run time", row.state),
        ),
    }
}

/// The refusal for a requeue whose key a live job holds.
pub(crate) fn duplicate(row: &JobRecord, holder: Option<JobId>) -> JobError {
    let holder = holder.map_or_else(|| "a live job".to_string(), |h| format!("live job {h}"));
    JobError::new(
        ErrorCode::JobDuplicate,
        format!(
            "job {} cannot be requeued: {holder} of `{}` holds its idempotency key",
            row.id, row.name
        ),
    )
}

/// The refusal for a `from_step` the run does not have.
pub(crate) fn unknown_step(id: JobId, step: &str) -> JobError {
    JobError::new(
        ErrorCode::Invariant,
        format!("job {id} has no step named `{step}`"),
    )
    .with_fix("name a step the run recorded (see `jobs show <id>`)")
}

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

/// Delete a worker's registry row.
#[derive(Debug, Clone, Copy)]
pub struct WorkerForgetParams<'a> {
    /// The worker.
    pub id: &'a str,
}

/// List the live workers.
#[derive(Debug, Clone, Copy)]
pub struct WorkerListParams {
    /// Now, on the injected clock.
    pub now: Timestamp,
}

/// Read one job's counter buckets.
#[derive(Debug, Clone, Copy)]
pub struct CountersParams<'a> {
    /// The name.
    pub name: &'a str,
    /// From when.
    pub since: Timestamp,
}

/// Sum every job's counters.
#[derive(Debug, Clone, Copy)]
pub struct CounterTotalsParams {
    /// From when.
    pub since: Timestamp,
}

/// Fold counter buckets into the next tier.
#[derive(Debug, Clone, Copy)]
pub struct CountersRollupParams {
    /// Now, on the injected clock.
    pub now: Timestamp,
}
