//! One enqueue, decided before it reaches a driver: the caller's [`EnqueueOptions`], and the
//! request a job's input becomes ([`Prepared`]) with its key rules and limits enforced. The
//! client and the scheduler's task entries both build their requests here.

use std::time::Duration;

use uuid::Uuid;

use crate::clock::{add, Timestamp};
use crate::driver::{ConflictPolicy, EnqueueRequest};
use crate::error::{ErrorCode, JobError};
use crate::job::Job;

/// Options for one enqueue.
///
/// ```
/// use jobs::EnqueueOptions;
/// use std::time::Duration;
///
/// let options = EnqueueOptions::new().delay(Duration::from_secs(60)).queue("slow");
/// ```
#[derive(Debug, Clone, Default)]
pub struct EnqueueOptions {
    run_at: Option<Timestamp>,
    delay: Option<Duration>,
    run_id: Option<String>,
    queue: Option<String>,
    tenant: Option<Option<String>>,
    on_conflict: ConflictPolicy,
    traceparent: Option<String>,
}

impl EnqueueOptions {
    /// No options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs no earlier than `at`.
    pub fn run_at(mut self, at: Timestamp) -> Self {
        self.run_at = Some(at);
        self
    }

    /// Runs no earlier than `delay` from now.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Uses this run id (a lowercase uuid, else `X_ID_INVALID`).
    pub fn run_id(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }

    /// Enqueues on this queue instead of the declared one.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// Files the job under this tenant instead of the one the declaration derives.
    pub fn tenant(mut self, tenant: Option<String>) -> Self {
        self.tenant = Some(tenant);
        self
    }

    /// Stores this W3C traceparent on the job, so its runs join the enqueue's trace.
    pub fn traceparent(mut self, traceparent: impl Into<String>) -> Self {
        self.traceparent = Some(traceparent.into());
        self
    }

    /// Refuses a live duplicate key with `X_JOB_DUPLICATE` instead of answering it.
    pub fn error_on_duplicate(mut self) -> Self {
        self.on_conflict = ConflictPolicy::Error;
        self
    }
}

/// A job's enqueue, decided from its input before any id or time: the key rules and the limits
/// (`crate::limits`) are enforced here, once, for the client, the scheduler and every driver.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    pub name: &'static str,
    pub queue: &'static str,
    pub input: serde_json::Value,
    pub idempotency_key: String,
    pub tenant_id: Option<String>,
    pub max_attempts: u32,
}

impl Prepared {
    pub(crate) fn of<J: Job>(input: &J::Input) -> Result<Prepared, JobError> {
        let d = &J::DESCRIPTOR;
        let idempotency_key = J::idempotency_key(input);
        if idempotency_key.is_empty() {
            return Err(JobError::new(
                ErrorCode::IdempotencyRequired,
                format!("job `{}` derived an empty idempotency key", d.name),
            ));
        }
        if d.concurrency.is_some_and(|c| c.keyed) {
            crate::limits::check_concurrency_key(d.name, J::concurrency_key(input))?;
        }
        let json = serde_json::to_value(input).map_err(|e| {
            JobError::new(
                ErrorCode::JobDeclarationInvalid,
                format!("the input of job `{}` does not serialize to JSON", d.name),
            )
            .with_cause(e)
        })?;
        Ok(Prepared {
            name: d.name,
            queue: d.queue,
            input: json,
            idempotency_key,
            tenant_id: J::tenant(input),
            max_attempts: d.retry.attempts,
        })
    }

    /// The driver request, with the options applied at `now`; refused when it breaks a limit
    /// (`crate::limits`), so no driver ever sees it.
    pub(crate) fn into_request(
        self,
        options: &EnqueueOptions,
        now: Timestamp,
    ) -> Result<EnqueueRequest, JobError> {
        let run_id = match &options.run_id {
            Some(text) => parse_run_id(text)?,
            None => Uuid::now_v7(),
        };
        let run_at = match (options.run_at, options.delay) {
            (Some(at), _) => at,
            (None, Some(delay)) => add(now, delay),
            (None, None) => now,
        };
        let request = EnqueueRequest {
            id: Uuid::now_v7(),
            run_id,
            name: self.name.to_string(),
            queue: options
                .queue
                .clone()
                .unwrap_or_else(|| self.queue.to_string()),
            input: self.input,
            idempotency_key: self.idempotency_key,
            tenant_id: match &options.tenant {
                Some(tenant) => tenant.clone(),
                None => self.tenant_id,
            },
            max_attempts: self.max_attempts,
            run_at,
            on_conflict: options.on_conflict,
            traceparent: options.traceparent.clone(),
            now,
        };
        crate::limits::check_enqueue(&request)?;
        Ok(request)
    }
}

fn parse_run_id(text: &str) -> Result<Uuid, JobError> {
    let invalid = || {
        JobError::new(
            ErrorCode::IdInvalid,
            "the run id given to enqueue is not a lowercase uuid",
        )
    };
    if text.len() != 36 || text.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(invalid());
    }
    Uuid::parse_str(text).map_err(|_| invalid())
}
