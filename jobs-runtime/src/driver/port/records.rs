//! The rows and parameters that cross the [`JobDriver`](super::JobDriver) port.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

/// A job's id: one row in the queue.
pub type JobId = Uuid;
/// A run's id: stable across a job's attempts and suspensions; steps are keyed by it.
pub type RunId = Uuid;
/// An event's id.
pub type EventId = Uuid;

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

/// What a duplicate live key does at enqueue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConflictPolicy {
    /// Answer the live job's ids with `deduped = true` (the default).
    #[default]
    Dedupe,
    /// Refuse with `X_JOB_DUPLICATE`.
    Error,
}

/// One job to insert.
#[derive(Debug, Clone)]
pub struct EnqueueRequest {
    /// The job's id (allocated by the client, so an outbox row and its job share it).
    pub id: JobId,
    /// The run's id.
    pub run_id: RunId,
    /// The job's durable name.
    pub name: String,
    /// The queue.
    pub queue: String,
    /// The serialized input.
    pub input: serde_json::Value,
    /// The idempotency key (never empty).
    pub idempotency_key: String,
    /// The tenant the key namespace and the limiter count under.
    pub tenant_id: Option<String>,
    /// Attempts allowed, including the first.
    pub max_attempts: u32,
    /// When it becomes due.
    pub run_at: Timestamp,
    /// What a duplicate live key does.
    pub on_conflict: ConflictPolicy,
    /// The W3C traceparent of the enqueue (one trace spans the enqueue and every run).
    pub traceparent: Option<String>,
    /// Who asked for the job (a user id, a service name), when the enqueue named one.
    pub actor: Option<String>,
    /// The clock's now.
    pub now: Timestamp,
}

/// What an enqueue answers: the job's own ids on every path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnqueueResult {
    /// The job's id (the live job's when deduped).
    pub id: JobId,
    /// The run's id (the live job's when deduped).
    pub run_id: RunId,
    /// `true` when a live job already held the key and nothing was inserted.
    pub deduped: bool,
}

/// Rounds an SQL driver's enqueue tries, insert then holder lookup, before it gives up: a holder
/// that finishes between the two frees the key, and the insert runs again.
pub const ENQUEUE_ROUNDS: usize = 3;

impl EnqueueResult {
    /// The answer of an enqueue that inserted nothing because the row `id` / `run_id` holds its
    /// job: deduped, unless that row is another job (`same_id` false: a live holder of the key)
    /// and the request refuses duplicates (`X_JOB_DUPLICATE`). Every driver answers this way.
    pub fn held(
        request: &EnqueueRequest,
        id: JobId,
        run_id: RunId,
        same_id: bool,
    ) -> Result<Self, JobError> {
        if !same_id && request.on_conflict == ConflictPolicy::Error {
            return Err(JobError::new(
                ErrorCode::JobDuplicate,
                format!(
                    "job `{}` {id} already holds this idempotency key",
                    request.name
                ),
            ));
        }
        Ok(EnqueueResult {
            id,
            run_id,
            deduped: true,
        })
    }

    /// The refusal of an enqueue whose key moved under it [`ENQUEUE_ROUNDS`] times (retryable).
    pub fn key_kept_moving(request: &EnqueueRequest) -> JobError {
        JobError::new(
            ErrorCode::Driver,
            format!(
                "enqueue of `{}` met a key that moved three times under it; retry",
                request.name
            ),
        )
    }
}

/// How many jobs a claim may take from one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueDemand {
    /// The queue.
    pub queue: String,
    /// Free slots for it.
    pub limit: u32,
}

/// A claim's parameters.
#[derive(Debug, Clone)]
pub struct ClaimParams {
    /// Per queue, how many to take. Empty is refused (`X_JOB_CLAIM_QUEUES_EMPTY`).
    pub demand: Vec<QueueDemand>,
    /// The claiming worker (shared: every claim and fence of a worker names the same one).
    pub worker_id: Arc<str>,
    /// How long a claimed job stays invisible without a heartbeat.
    pub visibility_timeout: Duration,
    /// Job names whose lapsed final attempts are buried `failed` (they have `dead_letter = false`).
    pub drop_exhausted: Vec<String>,
    /// The claimer's fairness cursor: the tenant its previous claim served last ("" before its
    /// first). A driver that visits a bounded number of tenants per claim starts its walk after
    /// it and wraps around; [`fair_cursor_after`] moves it. A driver whose claim visits every
    /// tenant may ignore it.
    pub fair_after: String,
    /// The clock's now.
    pub now: Timestamp,
}

/// The fairness cursor after a claim that started at `cursor` and took `claimed`: the last
/// tenant the walk served, i.e. the largest served tenant past the cursor, or, when the walk
/// wrapped around, the largest at or before it. Unchanged when nothing was claimed.
pub fn fair_cursor_after(cursor: &str, claimed: &[ClaimedJob]) -> String {
    fair_cursor_next(cursor, claimed).to_string()
}

/// [`fair_cursor_after`], borrowed: the worker copies it only when it moved.
pub(crate) fn fair_cursor_next<'a>(cursor: &'a str, claimed: &'a [ClaimedJob]) -> &'a str {
    let (mut wrapped, mut ahead): (Option<&str>, Option<&str>) = (None, None);
    for tenant in claimed.iter().map(|j| j.tenant_id.as_deref().unwrap_or("")) {
        let side = if tenant <= cursor {
            &mut wrapped
        } else {
            &mut ahead
        };
        *side = (*side).max(Some(tenant));
    }
    wrapped.or(ahead).unwrap_or(cursor)
}

/// Who holds a claim: the fence every settling write is checked against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClaimIdentity {
    /// The worker that claimed (shared with its claim: a fence is copied into every settle,
    /// heartbeat and step write of an attempt).
    pub worker_id: Arc<str>,
    /// The row's claim ordinal at that claim (never reset).
    pub claim: i64,
}

/// A claimed job, handed to the worker.
///
/// Its name, queue and input are shared, not owned: a driver that keeps them in memory hands
/// them over without a copy, and the worker's stages and telemetry take them by reference count.
#[derive(Debug, Clone)]
pub struct ClaimedJob {
    /// The job.
    pub id: JobId,
    /// The run.
    pub run_id: RunId,
    /// Its durable name.
    pub name: Arc<str>,
    /// Its queue.
    pub queue: Arc<str>,
    /// The stored input.
    pub input: Arc<serde_json::Value>,
    /// This attempt's number, from 1.
    pub attempt: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// The row's tenant.
    pub tenant_id: Option<String>,
    /// The fence.
    pub by: ClaimIdentity,
    /// Until when the claim holds without a heartbeat.
    pub visible_at: Timestamp,
    /// The enqueue's W3C traceparent (shared, as the name).
    pub traceparent: Option<Arc<str>>,
    /// Who asked for the job, when its enqueue named one (a span field of the run).
    pub actor: Option<String>,
    /// Whether the run has step records (a first attempt has none, and skips reading them).
    pub has_steps: bool,
}

impl ClaimedJob {
    /// The job a claim just marked running, read back from its row: `visible_at` is the lease
    /// the claim set, `has_steps` whether the run has step records yet.
    #[cfg(feature = "sql")]
    pub(crate) fn from_claimed_row(
        record: JobRecord,
        has_steps: bool,
        params: &ClaimParams,
        visible_at: Timestamp,
    ) -> Self {
        ClaimedJob {
            id: record.id,
            run_id: record.run_id,
            name: record.name.into(),
            queue: record.queue.into(),
            input: Arc::new(record.input),
            attempt: record.attempt,
            max_attempts: record.max_attempts,
            tenant_id: record.tenant_id,
            by: ClaimIdentity {
                worker_id: params.worker_id.clone(),
                claim: record.claims,
            },
            visible_at,
            traceparent: record.traceparent.map(Arc::from),
            actor: record.actor,
            has_steps,
        }
    }
}

/// What a claim answers.
#[derive(Debug, Clone, Default)]
pub struct ClaimResult {
    /// The jobs to run.
    pub jobs: Vec<ClaimedJob>,
    /// Rows the claim buried because their lease lapsed on the final attempt.
    pub exhausted: Vec<JobRecord>,
}

/// `last_error` of a row buried by the claim after its final attempt's lease lapsed.
pub const LEASE_LAPSED_FINAL_ATTEMPT: &str = "LEASE_LAPSED_FINAL_ATTEMPT";

/// Settles a job `done`.
#[derive(Debug, Clone)]
pub struct AckParams {
    /// The job.
    pub job_id: JobId,
    /// The claim it must still be under.
    pub by: ClaimIdentity,
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

/// A job row as the operator sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "sql", derive(sqlx::FromRow))]
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
    #[cfg_attr(feature = "sql", sqlx(json(nullable)))]
    pub progress: Option<Progress>,
    /// The enqueue's W3C traceparent.
    pub traceparent: Option<String>,
    /// Who asked for the job, when its enqueue named one.
    pub actor: Option<String>,
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

/// Counts for one queue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueStats {
    /// The queue.
    pub queue: String,
    /// Ready and due.
    pub ready: u64,
    /// Waiting on their run time (delayed, or ready and backing off).
    pub delayed: u64,
    /// Running.
    pub running: u64,
    /// Sleeping or waiting for an event.
    pub suspended: u64,
    /// Done.
    pub done: u64,
    /// Failed for good.
    pub failed: u64,
    /// Dead-lettered.
    pub dead: u64,
    /// Cancelled.
    pub cancelled: u64,
    /// Age of the oldest ready and due job, in milliseconds.
    pub oldest_ready_ms: Option<u64>,
}

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
#[cfg_attr(feature = "sql", derive(sqlx::FromRow))]
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
    #[cfg_attr(feature = "sql", sqlx(try_from = "i32"))]
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

/// An event to store.
#[derive(Debug, Clone)]
pub struct EventPublish {
    /// The event's id.
    pub id: EventId,
    /// The event name, e.g. `invoice.paid`.
    pub name: String,
    /// The correlation key a wait matches on.
    pub key: String,
    /// The payload.
    pub payload: serde_json::Value,
    /// How long the event stays matchable.
    pub ttl: Duration,
    /// The clock's now.
    pub now: Timestamp,
}

/// Deletes expired events, in one bounded batch.
#[derive(Debug, Clone)]
pub struct EventPurgeParams {
    /// Events whose expiry is at or before this go (an expired event no wait can match).
    pub now: Timestamp,
    /// Events in this batch, at most.
    pub limit: u32,
}

/// The default time an event stays matchable: 7 days.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// A stored event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "sql", derive(sqlx::FromRow))]
pub struct JobEvent {
    /// Its id.
    pub id: EventId,
    /// Name.
    pub name: String,
    /// Correlation key.
    pub key: String,
    /// Payload.
    pub payload: serde_json::Value,
    /// When it was stored.
    pub published_at: Timestamp,
}

/// The line a wait draws: only events stored after it match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventSince {
    /// When the wait began.
    pub at: Timestamp,
    /// The driver's mark when the wait began: which events the wait could already see (a
    /// sequence number in memory, a transaction snapshot in Postgres).
    pub mark: String,
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
    /// Now, on the injected clock.
    pub now: Timestamp,
}

/// Count jobs per queue and state.
#[derive(Debug, Clone, Copy)]
pub struct QueueStatsParams {
    /// Now, on the injected clock.
    pub now: Timestamp,
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

/// Find the first event a wait may take.
#[derive(Debug, Clone, Copy)]
pub struct EventFindParams<'a> {
    /// The name.
    pub name: &'a str,
    /// The key.
    pub key: &'a str,
    /// From when.
    pub since: &'a EventSince,
    /// Now, on the injected clock.
    pub now: Timestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(tenants: &[&str]) -> Vec<ClaimedJob> {
        tenants
            .iter()
            .map(|t| ClaimedJob {
                id: uuid::Uuid::nil(),
                run_id: uuid::Uuid::nil(),
                name: "j".into(),
                queue: "q".into(),
                input: Arc::new(serde_json::Value::Null),
                attempt: 1,
                max_attempts: 1,
                tenant_id: Some((*t).to_string()),
                by: ClaimIdentity {
                    worker_id: "w".into(),
                    claim: 1,
                },
                visible_at: chrono::DateTime::UNIX_EPOCH,
                traceparent: None,
                actor: None,
                has_steps: false,
            })
            .collect()
    }

    #[test]
    fn the_fair_cursor_moves_to_the_last_tenant_the_walk_served() {
        assert_eq!(fair_cursor_after("", &served(&["b", "a", "c"])), "c");
        assert_eq!(
            fair_cursor_after("b", &served(&["c", "d"])),
            "d",
            "ahead only"
        );
        assert_eq!(
            fair_cursor_after("c", &served(&["d", "e", "a", "b"])),
            "b",
            "wrapped around: the largest at or before the cursor"
        );
        assert_eq!(
            fair_cursor_after("c", &[]),
            "c",
            "nothing claimed: unchanged"
        );
    }
}
