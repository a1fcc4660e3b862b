//! One job to insert and what the enqueue answers, with the dedupe-or-refuse rule every driver
//! applies to a held idempotency key.
//!
//! A job holds its key (name, tenant, key) while it is live, and, when it was enqueued with a
//! unique period (`#[job(unique(for = "1h"))]`, [`EnqueueRequest::unique_for`]), after that
//! until its creation plus the period ([`holds_key`]): an enqueue of a held key answers the
//! holder, finished or not.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

use super::{JobId, JobState, RunId};

/// The lowest priority a job may carry (`#[job(priority = N)]`, [`EnqueueOptions::priority`](crate::EnqueueOptions::priority)).
pub const MIN_PRIORITY: i16 = -5;
/// The highest priority a job may carry: within a queue and a tenant's turn, a higher priority
/// is claimed first, then the earlier run time.
pub const MAX_PRIORITY: i16 = 5;
/// The priority of a job whose declaration and enqueue name none: the middle of the range.
pub const DEFAULT_PRIORITY: i16 = 0;

/// What a duplicate live key does at enqueue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConflictPolicy {
    /// Answer the live job's ids with `deduped = true` (the default).
    #[default]
    Dedupe,
    /// Refuse with `X_JOB_DUPLICATE`.
    Error,
    /// Debounce (`#[job(debounce = "..")]`): a live holder still queued (`ready` or `delayed`)
    /// takes this request's input and run time, and the enqueue answers its ids with
    /// `deduped = true`; a holder already started (running or suspended) is left as it is and
    /// answered the same way, as [`ConflictPolicy::Dedupe`] does.
    Replace,
}

impl ConflictPolicy {
    /// How a store keeps it (an outbox row's `on_conflict` column): `dedupe`, `error` or
    /// `replace`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConflictPolicy::Dedupe => "dedupe",
            ConflictPolicy::Error => "error",
            ConflictPolicy::Replace => "replace",
        }
    }

    /// Reads a stored policy back; anything but `error` and `replace` is the default.
    pub fn from_stored(text: &str) -> Self {
        match text {
            "error" => ConflictPolicy::Error,
            "replace" => ConflictPolicy::Replace,
            _ => ConflictPolicy::Dedupe,
        }
    }
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
    /// Its priority, [`MIN_PRIORITY`]..=[`MAX_PRIORITY`] (checked before any driver is reached):
    /// a higher one is claimed first within its tenant's turn.
    pub priority: i16,
    /// What a duplicate live key does.
    pub on_conflict: ConflictPolicy,
    /// The W3C traceparent of the enqueue (one trace spans the enqueue and every run).
    pub traceparent: Option<String>,
    /// Who asked for the job (a user id, a service name), when the enqueue named one.
    pub actor: Option<String>,
    /// The unique period (`#[job(unique(for = ".."))]`, [`EnqueueOptions::unique_for`](crate::EnqueueOptions::unique_for)):
    /// the job this request inserts holds its key until its creation (the `now` it is stored
    /// at) plus this period, whatever its state, so an enqueue of the key within the period
    /// answers it (`deduped`) even once it finished. `None`: it holds its key only while live.
    pub unique_for: Option<Duration>,
    /// The jobs it waits for ([`EnqueueOptions::depends_on`](crate::EnqueueOptions::depends_on)):
    /// it is stored blocked ([`is_blocked`](super::is_blocked)) until they have settled.
    /// `None`: it waits for nothing.
    pub dependencies: Option<super::Dependencies>,
    /// The clock's now.
    pub now: Timestamp,
}

impl EnqueueRequest {
    /// When the job this request inserts at `now` (its own, or its batch's) stops holding its
    /// key once it is no longer live: `now` plus [`EnqueueRequest::unique_for`].
    pub fn unique_until(&self, now: Timestamp) -> Option<Timestamp> {
        self.unique_for.map(|period| crate::clock::add(now, period))
    }

    /// [`EnqueueRequest::unique_for`] in whole milliseconds, as a store keeps it (an outbox
    /// row's `unique_for_ms`); [`unique_for_of_ms`] reads it back.
    pub fn unique_for_ms(&self) -> Option<i64> {
        self.unique_for
            .map(|period| i64::try_from(period.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A unique period kept in whole milliseconds ([`EnqueueRequest::unique_for_ms`]), read back; a
/// negative one is none.
pub fn unique_for_of_ms(ms: Option<i64>) -> Option<Duration> {
    ms.and_then(|ms| u64::try_from(ms).ok())
        .map(Duration::from_millis)
}

/// Whether a stored job in `state`, holding its key until `unique_until` after it stops being
/// live, holds its key at `now`: while live, and after that while `now < unique_until`. A row
/// that no longer holds it is no obstacle: the next enqueue of its key inserts a new job, and a
/// store clears the lapsed mark as it does. Every driver answers a holder by this rule.
pub fn holds_key(state: JobState, unique_until: Option<Timestamp>, now: Timestamp) -> bool {
    state.is_live() || unique_until.is_some_and(|until| now < until)
}

/// What an enqueue answers: the job's own ids on every path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnqueueResult {
    /// The job's id (the live job's when deduped).
    pub id: JobId,
    /// The run's id (the live job's when deduped).
    pub run_id: RunId,
    /// `true` when a job already held the key (a live one, or one still inside its unique
    /// period) or the id, and nothing was inserted.
    pub deduped: bool,
}

/// Rounds an SQL driver's enqueue tries, insert then holder lookup, before it gives up: a holder
/// that finishes between the two frees the key, as does a lapsed unique period's mark, which
/// the lookup clears; the insert then runs again.
pub const ENQUEUE_ROUNDS: usize = 3;

impl EnqueueResult {
    /// The answer of an enqueue that inserted `request`'s job: its own ids, not deduped.
    pub fn inserted(request: &EnqueueRequest) -> Self {
        EnqueueResult {
            id: request.id,
            run_id: request.run_id,
            deduped: false,
        }
    }

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

    /// Whether a live holder in `state` takes the request's input and run time: a debounced
    /// request ([`ConflictPolicy::Replace`]) whose holder is another job, still queued. Every
    /// driver asks this before it answers [`EnqueueResult::held`].
    pub fn replaces(request: &EnqueueRequest, same_id: bool, state: JobState) -> bool {
        request.on_conflict == ConflictPolicy::Replace
            && !same_id
            && matches!(state, JobState::Ready | JobState::Delayed)
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
