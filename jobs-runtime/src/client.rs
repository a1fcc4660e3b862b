//! [`Jobs`]: the one enqueue path. Typed handles call it, and so does the scheduler. The rest
//! hangs off small handles the modules above this one add: [`Jobs::operator`],
//! [`Jobs::tasks`], [`Jobs::backfills`], [`Jobs::worker`], [`Jobs::scheduler`].

use std::sync::Arc;

use serde::Serialize;
use tokio::sync::Notify;

use crate::clock::{SharedClock, SystemClock, Timestamp};
use crate::driver::{
    CallerConnection, CallerTransaction, EnqueueRequest, EnqueueResult, EventPublish,
    JobCancelParams, JobDriver, JobGetParams, JobId, JobLinks, JobRecord, MemoryDriver,
    OutboxStore, QueueStats, QueueStatsParams, DEFAULT_EVENT_TTL,
};
use crate::enqueue::{EnqueueOptions, Prepared};
use crate::error::{ErrorCode, JobError};
use crate::job::Job;
use crate::telemetry::{EnqueueTrace, Metrics};

/// What an enqueue answers: the job's own ids, and whether a live job already held the key.
pub type Enqueued = EnqueueResult;

pub use crate::limits::MAX_CONCURRENCY_KEY_LENGTH;

/// The client: enqueues jobs, publishes events, reads jobs, builds workers.
///
/// Cheap to clone; every clone shares the driver and the clock.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let jobs = jobs::Jobs::memory();
/// assert_eq!(jobs.driver().name(), "memory");
/// # }
/// ```
#[derive(Clone)]
pub struct Jobs {
    inner: Arc<JobsInner>,
    /// The tenant this client enqueues for ([`Jobs::for_tenant`]), if scoped.
    tenant: Option<Arc<str>>,
    /// Who this client enqueues for ([`Jobs::acting_as`]), if named.
    actor: Option<Arc<str>>,
    /// The outbox its `enqueue_in` stages through ([`Jobs::with_outbox`]), if installed.
    outbox: Option<crate::enqueue::OutboxInstalled>,
    /// The deployment environment it runs in ([`Jobs::in_environment`]), if named.
    environment: Option<Arc<str>>,
}

/// The variable [`Jobs::environment`] reads when no environment was named in code.
pub const ENVIRONMENT_VAR: &str = "JOBS_ENVIRONMENT";

struct JobsInner {
    driver: Arc<dyn JobDriver>,
    clock: SharedClock,
    /// Wakes this process's idle workers when it enqueues or publishes.
    local_wake: Arc<Notify>,
    /// Outcomes, lost leases and queue gauges, for Prometheus.
    metrics: Metrics,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("driver", &self.inner.driver.name())
            .field("clock", &self.inner.clock)
            .field("tenant", &self.tenant.is_some())
            .field("outbox", &self.outbox)
            .finish()
    }
}

impl Jobs {
    /// A client over `driver`, on the system clock.
    pub fn new(driver: impl JobDriver) -> Self {
        Self::with_clock(Arc::new(driver), Arc::new(SystemClock))
    }

    /// A client over a shared driver and an injected clock.
    pub fn with_clock(driver: Arc<dyn JobDriver>, clock: SharedClock) -> Self {
        Jobs {
            inner: Arc::new(JobsInner {
                driver,
                clock,
                local_wake: Arc::new(Notify::new()),
                metrics: Metrics::new(),
            }),
            tenant: None,
            actor: None,
            outbox: None,
            environment: None,
        }
    }

    /// This client, scoped to `tenant`: every enqueue through it is made in that tenant's
    /// context. The job is filed under `tenant`; an input that derives another tenant is refused
    /// with `X_JOB_TENANT_MISMATCH` before anything is written, and so is a call that names
    /// another tenant, unless it says [`EnqueueOptions::cross_tenant`]. It shares the driver,
    /// the clock and the metrics with `self`.
    ///
    /// ```
    /// # use jobs::prelude::*;
    /// # #[derive(Serialize, Deserialize, JsonSchema)] struct Invoice { org: String, id: u64 }
    /// #[job(key = "invoice:{id}", tenant = org)]
    /// async fn send_invoice(_run: Run, _input: Invoice) -> Result<(), JobError> { Ok(()) }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let jobs = Jobs::memory();
    /// let acme = jobs.for_tenant("acme").acting_as("user:42");
    /// SendInvoice::enqueue(&acme, Invoice { org: "acme".into(), id: 1 }).await.unwrap();
    /// let refused = SendInvoice::enqueue(&acme, Invoice { org: "globex".into(), id: 2 }).await;
    /// assert_eq!(refused.unwrap_err().code(), Some(ErrorCode::JobTenantMismatch));
    /// # }
    /// ```
    pub fn for_tenant(&self, tenant: impl Into<String>) -> Jobs {
        Jobs {
            tenant: Some(Arc::from(tenant.into())),
            ..self.clone()
        }
    }

    /// This client, naming `actor` (who asks: a user id, a service name) on every enqueue that
    /// does not name its own ([`EnqueueOptions::actor`]).
    pub fn acting_as(&self, actor: impl Into<String>) -> Jobs {
        Jobs {
            actor: Some(Arc::from(actor.into())),
            ..self.clone()
        }
    }

    /// This client, staging through the transactional outbox `store` (see
    /// [`outbox`](crate::outbox)): [`Jobs::enqueue_in`] and the handles' `enqueue_in` stage the
    /// job in the caller's transaction on the app's database, and an
    /// [`OutboxRelay`](crate::outbox::OutboxRelay) publishes it to this client's job store
    /// once that transaction commits. Under [`OutboxMode::Required`](crate::enqueue::OutboxMode)
    /// a plain `enqueue` is refused with `X_OUTBOX_NO_TX` unless it says
    /// [`EnqueueOptions::direct`]. It shares the driver, the clock and the metrics with `self`.
    pub fn with_outbox(&self, store: impl OutboxStore, mode: crate::enqueue::OutboxMode) -> Jobs {
        self.with_shared_outbox(Arc::new(store), mode)
    }

    /// [`Jobs::with_outbox`] over a shared store.
    pub fn with_shared_outbox(
        &self,
        store: Arc<dyn OutboxStore>,
        mode: crate::enqueue::OutboxMode,
    ) -> Jobs {
        Jobs {
            outbox: Some(crate::enqueue::OutboxInstalled { store, mode }),
            ..self.clone()
        }
    }

    /// This client, running in the deployment environment `environment` (`production`,
    /// `staging`): a backfill declaring `environments = [..]` runs, and is enqueued by the
    /// operator's gate, only where one of them is named. Without it,
    /// [`Jobs::environment`] reads [`ENVIRONMENT_VAR`]. A worker built from this client
    /// runs in the same environment.
    pub fn in_environment(&self, environment: impl Into<String>) -> Jobs {
        Jobs {
            environment: Some(Arc::from(environment.into())),
            ..self.clone()
        }
    }

    /// The deployment environment: the one named by [`Jobs::in_environment`], else the
    /// non-blank value of `JOBS_ENVIRONMENT`, else none.
    pub fn environment(&self) -> Option<String> {
        match &self.environment {
            Some(named) => Some(named.to_string()),
            None => std::env::var(ENVIRONMENT_VAR)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty()),
        }
    }

    /// The outbox this client stages through, if one is installed ([`Jobs::with_outbox`]).
    pub fn outbox(&self) -> Option<&Arc<dyn OutboxStore>> {
        self.outbox.as_ref().map(|installed| &installed.store)
    }

    /// The tenant this client is scoped to, if any ([`Jobs::for_tenant`]).
    pub fn tenant(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    /// The actor this client names, if any ([`Jobs::acting_as`]).
    pub fn actor(&self) -> Option<&str> {
        self.actor.as_deref()
    }

    /// The embedded default: an in-memory driver on the system clock. Nothing survives a
    /// restart; for tests, demos and the quickstart.
    pub fn memory() -> Self {
        Self::new(MemoryDriver::new())
    }

    /// A client over the store `url` names, migrated and ready: `memory:` (gone on restart),
    /// `sqlite://path/to/jobs.db` (one file on one host, created when missing; feature
    /// `sqlite`) or `postgres://...` (a fleet; the `public` schema). An app switches stores by
    /// configuration:
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), jobs::JobError> {
    /// let url = std::env::var("JOBS_URL").unwrap_or_else(|_| "memory:".into());
    /// let jobs = jobs::Jobs::open(&url).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// The scheme picks a registered driver ([`driver::url`](crate::driver::url): `memory:`,
    /// `sqlite:`, `postgres:`, or one a driver outside this crate registers); any other is
    /// `X_DRIVER_URL_INVALID`. Connection failures are the driver's own
    /// (see [`PostgresDriver::connect_with_timeout`](crate::driver::PostgresDriver::connect_with_timeout)).
    pub async fn open(url: &str) -> Result<Self, JobError> {
        let driver = crate::driver::url::connect(url, None).await?;
        driver.migrate().await?;
        Ok(Self::with_clock(driver, Arc::new(SystemClock)))
    }

    /// The driver.
    pub fn driver(&self) -> &Arc<dyn JobDriver> {
        &self.inner.driver
    }

    /// The clock.
    pub fn clock(&self) -> &SharedClock {
        &self.inner.clock
    }

    /// Now, on the injected clock.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// The metrics its workers feed; see [`Operator::metrics_text`](crate::operator::Operator::metrics_text).
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    pub(crate) fn local_wake(&self) -> &Arc<Notify> {
        &self.inner.local_wake
    }

    /// Enqueues job `J`. Usually called through the handle: `SendWelcome::enqueue(&jobs, input)`.
    pub async fn enqueue<J: Job>(&self, input: J::Input) -> Result<Enqueued, JobError> {
        self.enqueue_with::<J>(input, EnqueueOptions::default())
            .await
    }

    /// Enqueues job `J` with options (run time, run id, queue, tenant).
    pub async fn enqueue_with<J: Job>(
        &self,
        input: J::Input,
        options: EnqueueOptions,
    ) -> Result<Enqueued, JobError> {
        self.refuse_outside_transaction(J::DESCRIPTOR.name, &options)?;
        let request = self.request::<J>(&input, &options)?;
        self.send(request).await
    }

    /// `X_OUTBOX_NO_TX` when the outbox requires a transaction and the call does not opt out.
    fn refuse_outside_transaction(
        &self,
        job: &str,
        options: &EnqueueOptions,
    ) -> Result<(), JobError> {
        match &self.outbox {
            Some(installed)
                if installed.mode == crate::enqueue::OutboxMode::Required
                    && !options.is_direct() =>
            {
                Err(crate::enqueue::outbox_no_transaction(job))
            }
            _ => Ok(()),
        }
    }

    /// One request to the driver, traced, then the local wake.
    async fn send(&self, mut request: EnqueueRequest) -> Result<Enqueued, JobError> {
        let trace = EnqueueTrace::start(std::slice::from_mut(&mut request));
        let result = trace.send(self.inner.driver.job_enqueue(&request)).await?;
        self.inner.local_wake.notify_waiters();
        Ok(result)
    }

    /// Enqueues the registered job `entry` from an untyped JSON input (the dashboard's enqueue
    /// form, the MCP server's enqueue tools): refused with `X_JOB_INPUT_INVALID` unless it
    /// parses as the job's input type.
    #[cfg_attr(not(any(feature = "dashboard", feature = "mcp")), allow(dead_code))]
    pub(crate) async fn enqueue_json(
        &self,
        entry: &crate::registry::JobEntry,
        input: &serde_json::Value,
        options: EnqueueOptions,
    ) -> Result<Enqueued, JobError> {
        let request = entry
            .prepare(input)?
            .into_request(&self.scope(options), self.now())?;
        self.send(request).await
    }

    /// Enqueues many inputs of job `J` in one driver call; each answers as `enqueue` would.
    pub async fn enqueue_many<J, I>(&self, inputs: I) -> Result<Vec<Enqueued>, JobError>
    where
        J: Job,
        I: IntoIterator<Item = J::Input>,
    {
        let options = self.scope(EnqueueOptions::default());
        self.refuse_outside_transaction(J::DESCRIPTOR.name, &options)?;
        // One clock reading for the whole batch: every job due now is stored `ready`, not a
        // few microseconds in the future of the batch's `now` (and so `delayed`).
        let now = self.now();
        let mut requests = inputs
            .into_iter()
            .map(|input| Prepared::of::<J>(&input)?.into_request(&options, now))
            .collect::<Result<Vec<_>, _>>()?;
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        self.enqueue_requests(&mut requests).await
    }

    /// Sends requests built before (a batch, an invoke's children) in one call, traced, then
    /// the local wake.
    pub(crate) async fn enqueue_requests(
        &self,
        requests: &mut [EnqueueRequest],
    ) -> Result<Vec<Enqueued>, JobError> {
        crate::enqueue::send_many(&*self.inner.driver, &self.inner.local_wake, requests).await
    }

    /// Enqueues job `J` on the caller's connection or transaction: the job exists if and only
    /// if that transaction commits. With an outbox installed ([`Jobs::with_outbox`]) the job is
    /// staged in the outbox on the caller's database, whichever store runs the jobs, and the
    /// relay publishes it after the commit (the answer's `deduped` is then always `false`: a
    /// live key is met only at publish). Without one, the caller's transaction must be on the
    /// job store's own Postgres or SQLite database, and the job is written there by the same
    /// statement as [`Jobs::enqueue`], with the same dedupe.
    ///
    /// ```no_run
    /// # use jobs::prelude::*;
    /// # #[derive(Serialize, Deserialize, JsonSchema)] struct Signup { user_id: u64 }
    /// # #[job(key = "welcome:{user_id}", tenant = none)]
    /// # async fn send_welcome(_run: Run, _input: Signup) -> Result<(), JobError> { Ok(()) }
    /// # async fn demo(jobs: Jobs, pool: jobs::sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
    /// let mut tx = pool.begin().await?;
    /// // ... the caller's own writes on `tx` ...
    /// jobs.enqueue_in::<SendWelcome>(&mut tx, Signup { user_id: 7 }).await?;
    /// tx.commit().await?; // the job exists from here on, and only if this commits
    /// # Ok(()) }
    /// ```
    pub async fn enqueue_in<J: Job>(
        &self,
        conn: &mut impl CallerConnection,
        input: J::Input,
    ) -> Result<Enqueued, JobError> {
        self.enqueue_in_with::<J>(conn, input, EnqueueOptions::default())
            .await
    }

    /// [`Jobs::enqueue_in`] with options.
    pub async fn enqueue_in_with<J: Job>(
        &self,
        conn: &mut impl CallerConnection,
        input: J::Input,
        options: EnqueueOptions,
    ) -> Result<Enqueued, JobError> {
        if options.has_dependencies() {
            return Err(JobError::new(
                ErrorCode::Invariant,
                format!(
                    "job `{}` names dependencies in a caller's transaction; a dependent job is enqueued on its own",
                    J::DESCRIPTOR.name
                ),
            )
            .with_fix("enqueue the dependent job with `enqueue_with` after the transaction commits"));
        }
        if let Some(installed) = self.outbox.as_ref().filter(|_| !options.is_direct()) {
            let mut request = self.request::<J>(&input, &options)?;
            // The traceparent is stamped now: the relay publishes with no request span.
            let trace = EnqueueTrace::start(std::slice::from_mut(&mut request));
            let staged = async {
                installed
                    .store
                    .outbox_stage(conn.connection(), &request)
                    .await?;
                Ok(EnqueueResult {
                    id: request.id,
                    run_id: request.run_id,
                    deduped: false,
                })
            };
            return trace.send(staged).await;
        }
        let joins = self.caller_transaction()?;
        let mut request = self.request::<J>(&input, &options)?;
        let trace = EnqueueTrace::start(std::slice::from_mut(&mut request));
        trace
            .send(joins.job_enqueue_in(conn.connection(), &request))
            .await
    }

    /// Builds the driver request: the key rules and the limits are enforced here, once, for
    /// every driver.
    fn request<J: Job>(
        &self,
        input: &J::Input,
        options: &EnqueueOptions,
    ) -> Result<EnqueueRequest, JobError> {
        Prepared::of::<J>(input)?.into_request(&self.scope(options.clone()), self.now())
    }

    /// `options` as a call on this client: its tenant scope and actor applied.
    fn scope(&self, options: EnqueueOptions) -> EnqueueOptions {
        options.scoped(self.tenant.as_deref(), self.actor.as_deref())
    }

    /// Publishes an event: every run waiting on `name` under `key` resumes with `payload`.
    pub async fn publish_event<T: Serialize>(
        &self,
        name: &str,
        key: &str,
        payload: &T,
    ) -> Result<(), JobError> {
        let event = self.event(name, key, payload)?;
        self.inner.driver.event_publish(&event).await?;
        self.inner.local_wake.notify_waiters();
        Ok(())
    }

    /// Publishes an event on the caller's connection or transaction: it exists, and wakes the
    /// runs waiting for it, if and only if that transaction commits. A wait that began before
    /// the commit still matches it.
    pub async fn publish_event_in<T: Serialize>(
        &self,
        conn: &mut impl CallerConnection,
        name: &str,
        key: &str,
        payload: &T,
    ) -> Result<(), JobError> {
        let joins = self.caller_transaction()?;
        let event = self.event(name, key, payload)?;
        joins.event_publish_in(conn.connection(), &event).await?;
        Ok(())
    }

    fn event<T: Serialize>(
        &self,
        name: &str,
        key: &str,
        payload: &T,
    ) -> Result<EventPublish, JobError> {
        crate::limits::check_event_address(name, key)?;
        let payload = serde_json::to_value(payload).map_err(|e| {
            JobError::new(
                ErrorCode::JobEventInvalid,
                format!("the payload of event `{name}` does not serialize to JSON"),
            )
            .with_cause(e)
        })?;
        crate::limits::check_event_payload(name, &payload)?;
        Ok(EventPublish {
            id: crate::entropy::new_id(),
            name: name.to_string(),
            key: key.to_string(),
            payload,
            ttl: DEFAULT_EVENT_TTL,
            now: self.now(),
        })
    }

    /// The driver's way into a caller's transaction, or the refusal naming the driver.
    fn caller_transaction(&self) -> Result<&dyn CallerTransaction, JobError> {
        self.inner.driver.caller_transaction().ok_or_else(|| {
            JobError::new(
                ErrorCode::DriverUnavailable,
                format!(
                    "work inside a caller's transaction needs a driver that joins one (the Postgres and SQLite drivers do); this client runs on `{}`",
                    self.inner.driver.name()
                ),
            )
            .with_fix("build `Jobs` over a `PostgresDriver` or a `SqliteDriver` to enqueue or publish inside a caller's transaction")
        })
    }

    /// A part of the driver a verb needs (its operator surface, scheduler store, ...), or
    /// `X_NOT_IMPLEMENTED` naming the driver and what it `lacks`.
    pub(crate) fn driver_part<'a, T: ?Sized>(
        &'a self,
        part: impl FnOnce(&'a dyn JobDriver) -> Option<&'a T>,
        lacks: &str,
    ) -> Result<&'a T, JobError> {
        part(&**self.driver()).ok_or_else(|| {
            JobError::new(
                ErrorCode::NotImplemented,
                format!("the `{}` driver {lacks}", self.driver().name()),
            )
        })
    }

    /// Reads one job. On a client scoped to a tenant ([`Jobs::for_tenant`]), another tenant's
    /// job reads as no job.
    pub async fn job(&self, id: JobId) -> Result<Option<JobRecord>, JobError> {
        let row = self.inner.driver.job_get(&JobGetParams { id }).await?;
        Ok(row.filter(|row| self.sees(row)))
    }

    /// Reads a job's links to other jobs: the jobs it depends on with their states, the jobs
    /// depending on it, and its policy when a dependency fails
    /// ([`EnqueueOptions::depends_on`]). On a client scoped to a tenant, another tenant's job
    /// has none.
    pub async fn links(&self, id: JobId) -> Result<JobLinks, JobError> {
        if self.tenant.is_some() && self.job(id).await?.is_none() {
            return Ok(JobLinks::default());
        }
        self.inner.driver.job_links(id).await
    }

    /// The result job `J` kept for the job `id` (`#[job(.., keep_result)]`), parsed as `J`'s
    /// output. `None` while the job has not completed (and for a job that keeps no result);
    /// `X_JOB_NOT_FOUND` for an id this client does not see or a job of another name;
    /// `X_JOB_RESULT_INVALID` when the stored result no longer parses as the output type.
    /// `#[job]` gives the handle the same read: `SendReport::result(&jobs, id)`.
    ///
    /// ```
    /// use jobs::prelude::*;
    ///
    /// #[input]
    /// pub struct Count {
    ///     pub n: u64,
    /// }
    ///
    /// #[job(key = "count:{n}", tenant = none, keep_result)]
    /// async fn count_up(_run: Run, input: Count) -> Result<Vec<u64>, JobError> {
    ///     Ok((1..=input.n).collect())
    /// }
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() -> Result<(), JobError> {
    ///     let kit = jobs::testing::TestKit::new();
    ///     let done = kit.run::<CountUp>(Count { n: 3 }).await;
    ///     assert_eq!(kit.jobs().job_result::<CountUp>(done.id).await?, Some(vec![1, 2, 3]));
    ///     assert_eq!(CountUp::result(kit.jobs(), done.id).await?, Some(vec![1, 2, 3]));
    ///     Ok(())
    /// }
    /// ```
    pub async fn job_result<J>(&self, id: JobId) -> Result<Option<J::Output>, JobError>
    where
        J: Job,
        J::Output: crate::descriptor::JobOutput,
    {
        let name = J::DESCRIPTOR.name;
        let row = self
            .job(id)
            .await?
            .filter(|row| row.name == name)
            .ok_or_else(|| {
                JobError::new(
                    ErrorCode::JobNotFound,
                    format!("no `{name}` job with id {id}"),
                )
            })?;
        let Some(stored) = row.result else {
            return Ok(None);
        };
        serde_json::from_value(stored).map(Some).map_err(|e| {
            // serde's message names the field and the expected type, never the value.
            JobError::new(
                ErrorCode::JobResultInvalid,
                format!(
                    "the stored result of job {id} (`{name}`) no longer parses as its output type: {}",
                    crate::error::redact_serde(&e)
                ),
            )
        })
    }

    /// Whether this client may see `row`: any row, unless it is scoped to a tenant, then only
    /// that tenant's. A row's tenant never changes once it is written, so a verb that checks
    /// the row it read and then acts on its id acts on a row of the same tenant.
    pub(crate) fn sees(&self, row: &JobRecord) -> bool {
        self.tenant
            .as_deref()
            .is_none_or(|tenant| row.tenant_id.as_deref() == Some(tenant))
    }

    /// Cancels a live job: a queued one at once, a running one at its next heartbeat. The
    /// cancel and the client's actor ([`Jobs::acting_as`]) go into the job's history together.
    /// On a client scoped to a tenant, another tenant's job is refused as an unknown id is.
    pub async fn cancel(&self, id: JobId) -> Result<JobRecord, JobError> {
        self.cancel_job(id, None).await
    }

    /// Cancels a live job as [`Jobs::cancel`] does, recording `reason` (at most
    /// [`MAX_CANCEL_REASON_BYTES`](crate::limits::MAX_CANCEL_REASON_BYTES), one line) as the
    /// detail of its `cancel` history row, beside the actor.
    pub async fn cancel_with_reason(&self, id: JobId, reason: &str) -> Result<JobRecord, JobError> {
        let reason = crate::limits::checked_cancel_reason(reason)?;
        self.cancel_job(id, Some(reason)).await
    }

    async fn cancel_job(&self, id: JobId, reason: Option<String>) -> Result<JobRecord, JobError> {
        let actor = crate::limits::checked_operator_actor(self.actor())?;
        if self.tenant.is_some() && self.job(id).await?.is_none() {
            return Err(JobError::new(
                ErrorCode::JobNotCancellable,
                format!("no job with id {id}"),
            ));
        }
        self.inner
            .driver
            .job_cancel(&JobCancelParams {
                reason,
                id,
                actor,
                now: self.now(),
            })
            .await
    }

    /// Counts per queue.
    pub async fn stats(&self) -> Result<Vec<QueueStats>, JobError> {
        self.inner
            .driver
            .queue_stats(&QueueStatsParams { now: self.now() })
            .await
    }

    /// Each queue's depth without its done rows (the dashboard's overview), read on Postgres
    /// from indexes alone.
    #[cfg(feature = "dashboard")]
    pub(crate) async fn depth(&self) -> Result<Vec<QueueStats>, JobError> {
        self.inner
            .driver
            .queue_depth(&QueueStatsParams { now: self.now() })
            .await
    }
}
