//! One enqueue, decided before it reaches a driver: the caller's [`EnqueueOptions`], and the
//! request a job's input becomes ([`Prepared`]) with its key rules and limits enforced. The
//! client and the scheduler's task entries both build their requests here.

use std::time::Duration;

use uuid::Uuid;

use crate::clock::{add, Timestamp};
use crate::driver::{ConflictPolicy, Dependencies, DependencyFailure, EnqueueRequest};
use crate::error::{ErrorCode, JobError};
use crate::job::Job;

/// Options for one enqueue.
///
/// ```
/// use jobs::EnqueueOptions;
/// use std::time::Duration;
///
/// let options = EnqueueOptions::new()
///     .delay(Duration::from_secs(60))
///     .queue("slow")
///     .actor("user:42");
/// ```
#[derive(Debug, Clone, Default)]
pub struct EnqueueOptions {
    run_at: Option<Timestamp>,
    delay: Option<Duration>,
    run_id: Option<String>,
    job_id: Option<Uuid>,
    queue: Option<String>,
    tenant: Option<Option<String>>,
    cross_tenant: bool,
    actor: Option<String>,
    on_conflict: ConflictPolicy,
    traceparent: Option<String>,
    priority: Option<i16>,
    unique_for: Option<Duration>,
    depends_on: Vec<Uuid>,
    on_dependency_failure: Option<DependencyFailure>,
    direct: bool,
    /// The tenant of the client the call is made on ([`crate::Jobs::for_tenant`]); set by the
    /// client, never by the caller.
    scope: Option<String>,
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

    /// Uses this job id instead of a fresh one. An enqueue of an id that is already stored
    /// answers that job, whatever its state, and inserts nothing: a stable id (an inbound
    /// webhook's, derived from its delivery id) dedupes past the job's life, until retention
    /// deletes the row, where the idempotency key dedupes only while the job is live.
    pub fn job_id(mut self, id: Uuid) -> Self {
        self.job_id = Some(id);
        self
    }

    /// Enqueues on this queue instead of the declared one.
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// Makes the enqueue in this tenant's context: the job is filed under `tenant`. When the
    /// input derives another tenant (`tenant = <field>` on the `#[job]`), the enqueue is refused
    /// with `X_JOB_TENANT_MISMATCH` before anything is written, unless the call also says
    /// [`EnqueueOptions::cross_tenant`]. `None` files the job under no tenant.
    pub fn tenant(mut self, tenant: Option<String>) -> Self {
        self.tenant = Some(tenant);
        self
    }

    /// Says that this enqueue crosses tenants on purpose: the job is filed under the call's
    /// (or the client's) tenant although its input derives another, e.g. a billing bucket
    /// that pays for another org's run. Without it such an enqueue is `X_JOB_TENANT_MISMATCH`.
    pub fn cross_tenant(mut self) -> Self {
        self.cross_tenant = true;
        self
    }

    /// Names who asked for the job (a user id, a service name: an id, never a payload): it is
    /// stored on the row, shown by `jobs show`, the API and the MCP server, and recorded on the
    /// enqueue's and every run's span (`jobs.actor`). At most
    /// [`MAX_ACTOR_BYTES`](crate::limits::MAX_ACTOR_BYTES) bytes (else `X_LIMIT_EXCEEDED`),
    /// no control character (else `X_VALUE_UNSTORABLE`).
    pub fn actor(mut self, actor: impl Into<String>) -> Self {
        self.actor = Some(actor.into());
        self
    }

    /// Enqueues at this priority instead of the declared one (`#[job(priority = N)]`, default
    /// 0): within its queue and its tenant's turn, a higher priority is claimed first, then the
    /// earlier run time. Outside [`MIN_PRIORITY`](crate::driver::MIN_PRIORITY)..=
    /// [`MAX_PRIORITY`](crate::driver::MAX_PRIORITY) (-5..=5) the enqueue is refused with
    /// `X_INVARIANT` before anything is written.
    pub fn priority(mut self, priority: i16) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Gives the job this enqueue inserts a unique period instead of the declared one
    /// (`#[job(unique(for = "1h"))]`; none when not declared): the job holds its key for
    /// `period` after its enqueue, finished or not, so an enqueue of the key within it answers
    /// this job (deduped). It says nothing about a job already holding the key: that one's own
    /// period decides. A period under 1 ms, or one over
    /// [`MAX_UNIQUE_FOR`](crate::limits::MAX_UNIQUE_FOR), is refused with `X_INVARIANT`
    /// before anything is written.
    ///
    /// ```
    /// use jobs::EnqueueOptions;
    /// use std::time::Duration;
    ///
    /// // At most one of these per key and day, however often it is asked for.
    /// let options = EnqueueOptions::new().unique_for(Duration::from_secs(24 * 3600));
    /// ```
    pub fn unique_for(mut self, period: Duration) -> Self {
        self.unique_for = Some(period);
        self
    }

    /// Makes the job wait for these jobs: it is not claimed until every one of them has
    /// settled, and if one ends `failed`, `dead` or `cancelled` it follows
    /// [`EnqueueOptions::on_dependency_failure`] (cancelled by default, with
    /// `X_JOB_DEPENDENCY_FAILED` naming that job). Each must exist, in the new job's tenant,
    /// when it is named (`X_JOB_NOT_FOUND` otherwise, before anything is written), so no cycle
    /// can be built. A job with dependencies takes no run time or delay (`X_INVARIANT`): it
    /// starts when they are done. A key already held answers its holder, as any enqueue does,
    /// and names no dependency for it.
    ///
    /// ```no_run
    /// # use jobs::prelude::*;
    /// # #[derive(Serialize, Deserialize, JsonSchema)] struct Day { day: String }
    /// # #[job(key = "{day}", tenant = none)] async fn extract(_r: Run, _i: Day) -> Result<(), JobError> { Ok(()) }
    /// # #[job(key = "{day}", tenant = none)] async fn report(_r: Run, _i: Day) -> Result<(), JobError> { Ok(()) }
    /// # async fn f(jobs: Jobs) -> Result<(), JobError> {
    /// let day = || Day { day: "2026-12-05".into() };
    /// let extracted = jobs.enqueue::<Extract>(day()).await?;
    /// let after = EnqueueOptions::new().depends_on([extracted.id]);
    /// jobs.enqueue_with::<Report>(day(), after).await?;
    /// # Ok(()) }
    /// ```
    pub fn depends_on(mut self, jobs: impl IntoIterator<Item = Uuid>) -> Self {
        for id in jobs {
            if !self.depends_on.contains(&id) {
                self.depends_on.push(id);
            }
        }
        self
    }

    /// What the job does when a job it depends on ([`EnqueueOptions::depends_on`]) ends
    /// `failed`, `dead` or `cancelled`, instead of the declared policy
    /// (`#[job(on_dependency_failure = run_anyway)]`; default cancel): [`DependencyFailure::Cancel`]
    /// cancels it, and the jobs depending on it with the same policy;
    /// [`DependencyFailure::RunAnyway`] runs it anyway once every dependency has ended.
    pub fn on_dependency_failure(mut self, policy: DependencyFailure) -> Self {
        self.on_dependency_failure = Some(policy);
        self
    }

    /// Stores this W3C traceparent on the job, so its runs join the enqueue's trace.
    pub fn traceparent(mut self, traceparent: impl Into<String>) -> Self {
        self.traceparent = Some(traceparent.into());
        self
    }

    /// Publishes this enqueue directly to the job store, past an installed outbox: a plain
    /// `enqueue` is then allowed under `OutboxMode::Required` (where it is otherwise
    /// `X_OUTBOX_NO_TX`), and `enqueue_in` joins the caller's transaction on the job store's
    /// own database instead of staging.
    pub fn direct(mut self) -> Self {
        self.direct = true;
        self
    }

    pub(crate) fn has_dependencies(&self) -> bool {
        !self.depends_on.is_empty()
    }

    pub(crate) fn is_direct(&self) -> bool {
        self.direct
    }

    /// Refuses a live duplicate key with `X_JOB_DUPLICATE` instead of answering it.
    pub fn error_on_duplicate(mut self) -> Self {
        self.on_conflict = ConflictPolicy::Error;
        self
    }

    /// These options as a call on a client scoped to `tenant` and acting for `actor`: the
    /// call's own tenant and actor, when it names them, come first.
    pub(crate) fn scoped(mut self, tenant: Option<&str>, actor: Option<&str>) -> Self {
        self.scope = tenant.map(str::to_string);
        if self.actor.is_none() {
            self.actor = actor.map(str::to_string);
        }
        self
    }

    /// The tenant the job is filed under, given the one its input derives; refused with
    /// `X_JOB_TENANT_MISMATCH` when the enqueue is made in one tenant's context for another
    /// and does not say [`EnqueueOptions::cross_tenant`].
    fn filed_tenant(&self, job: &str, derived: Option<String>) -> Result<Option<String>, JobError> {
        let filed = match (&self.tenant, &self.scope) {
            (Some(tenant), _) => tenant.clone(),
            (None, Some(scope)) => Some(scope.clone()),
            (None, None) => derived.clone(),
        };
        if self.cross_tenant {
            return Ok(filed);
        }
        // Neither tenant is named in the message: a tenant is an id the caller may not be
        // allowed to see (the client's scope, or the other org's).
        if let Some(scope) = &self.scope {
            if filed.as_deref() != Some(scope.as_str()) {
                return Err(mismatch(
                    job,
                    "the call files it under a tenant other than the one its client is scoped to",
                ));
            }
        }
        if let (Some(derived), Some(filed)) = (&derived, &filed) {
            if derived != filed {
                let context = if self.tenant.is_some() {
                    "the tenant the call names"
                } else {
                    "the tenant its client is scoped to"
                };
                return Err(mismatch(
                    job,
                    &format!("its input derives a tenant other than {context}"),
                ));
            }
        }
        Ok(filed)
    }
}

fn mismatch(job: &str, why: &str) -> JobError {
    JobError::new(
        ErrorCode::JobTenantMismatch,
        format!("the enqueue of job `{job}` is refused before anything is written: {why}"),
    )
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
    pub expires_in: Option<Duration>,
    /// `debounce`: the enqueue waits this long and replaces a queued holder of its key.
    pub debounce: Option<Duration>,
    /// `unique(for = ..)`: the job holds its key this long after its enqueue.
    pub unique_for: Option<Duration>,
    pub priority: i16,
    /// `on_dependency_failure = ..`: a dependent's policy unless the enqueue names one.
    pub on_dependency_failure: DependencyFailure,
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
        if d.rate.is_some_and(|r| r.keyed) {
            crate::limits::check_rate_key(d.name, J::rate_key(input))?;
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
            expires_in: d.expires_in,
            debounce: d.debounce,
            unique_for: d.unique_for,
            priority: d.priority,
            on_dependency_failure: d.on_dependency_failure,
        })
    }

    /// The driver request, with the options applied at `now`; refused when it breaks a limit
    /// (`crate::limits`), so no driver ever sees it.
    pub(crate) fn into_request(
        self,
        options: &EnqueueOptions,
        now: Timestamp,
    ) -> Result<EnqueueRequest, JobError> {
        let tenant_id = options.filed_tenant(self.name, self.tenant_id)?;
        let id = options.job_id.unwrap_or_else(crate::entropy::new_id);
        // A run is its first job's: its id is the job's unless one is named, so a store keeps
        // an index of run ids only for the rows whose run began elsewhere.
        let run_id = match &options.run_id {
            Some(text) => parse_run_id(text)?,
            None => id,
        };
        // A debounced job waits its window from its latest enqueue, which replaces the queued
        // holder of its key; a call that refuses duplicates keeps its refusal.
        let run_at = match (options.run_at, options.delay) {
            (Some(at), _) => at,
            (None, Some(delay)) => add(now, delay),
            (None, None) => add(now, self.debounce.unwrap_or_default()),
        };
        let on_conflict = match (options.on_conflict, self.debounce) {
            (ConflictPolicy::Dedupe, Some(_)) => ConflictPolicy::Replace,
            (policy, _) => policy,
        };
        if let Some(ttl) = self.expires_in {
            // `expires_in` counts from the enqueue: a job due at or after its expiry could
            // only ever be discarded.
            if run_at >= add(now, ttl) {
                return Err(JobError::new(
                    ErrorCode::Invariant,
                    format!(
                        "job `{}` would be due after its expires_in ({} ms after the enqueue) and could never run; refused before anything is written",
                        self.name,
                        ttl.as_millis()
                    ),
                )
                .with_fix("delay the job less than its `expires_in`, or raise `expires_in`"));
            }
        }
        let request = EnqueueRequest {
            id,
            run_id,
            name: self.name.to_string(),
            queue: options
                .queue
                .clone()
                .unwrap_or_else(|| self.queue.to_string()),
            input: self.input,
            idempotency_key: self.idempotency_key,
            tenant_id,
            max_attempts: self.max_attempts,
            run_at,
            priority: options.priority.unwrap_or(self.priority),
            on_conflict,
            traceparent: options.traceparent.clone(),
            actor: options.actor.clone(),
            unique_for: options.unique_for.or(self.unique_for),
            dependencies: (!options.depends_on.is_empty()).then(|| Dependencies {
                on: options.depends_on.clone(),
                on_failure: options
                    .on_dependency_failure
                    .unwrap_or(self.on_dependency_failure),
            }),
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

/// Sends requests built before (a batch, an invoke's children) in one driver call, traced,
/// then wakes the idle workers of this process.
pub(crate) async fn send_many(
    driver: &dyn crate::driver::JobDriver,
    local_wake: &tokio::sync::Notify,
    requests: &mut [EnqueueRequest],
) -> Result<Vec<crate::driver::EnqueueResult>, JobError> {
    let trace = crate::telemetry::EnqueueTrace::start(requests);
    let results = trace.send_many(driver.job_enqueue_many(requests)).await?;
    local_wake.notify_waiters();
    Ok(results)
}

/// Whether an enqueue outside a transaction is allowed once the outbox is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutboxMode {
    /// `enqueue_in` stages; a plain `enqueue` still publishes directly.
    #[default]
    Optional,
    /// Every enqueue must be staged: a plain `enqueue` is refused with `X_OUTBOX_NO_TX`, unless
    /// the call says [`EnqueueOptions::direct`](crate::EnqueueOptions::direct).
    Required,
}

/// The outbox a client stages through ([`Jobs::with_outbox`](crate::Jobs::with_outbox)).
#[derive(Clone)]
pub(crate) struct OutboxInstalled {
    pub store: std::sync::Arc<dyn crate::driver::OutboxStore>,
    pub mode: OutboxMode,
}

impl std::fmt::Debug for OutboxInstalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox")
            .field("store", &self.store.name())
            .field("mode", &self.mode)
            .finish()
    }
}

/// The refusal of an enqueue made outside a transaction while the outbox requires one.
pub(crate) fn outbox_no_transaction(job: &str) -> JobError {
    JobError::new(
        ErrorCode::OutboxNoTx,
        format!("the enqueue of job `{job}` was made outside a transaction, and the outbox is installed with `OutboxMode::Required`"),
    )
}
