//! The operator's verbs, on the [`Operator`] handle [`Jobs::operator`] gives: what the `jobs` command-line tool, an MCP server and an
//! admin screen call. Each returns plain data that serializes to the `--json` shape.
//!
//! Every verb that acts on a job records who did it: the client's actor ([`Jobs::acting_as`]:
//! an operator's identity) goes into the job's history with the verb, in the same statement or
//! transaction as the act, and [`Operator::history`] reads it back (also part of
//! [`Operator::inspect_job`]'s answer).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), jobs::JobError> {
//! use jobs::driver::introspect::JobListParams;
//! let jobs = jobs::Jobs::memory();
//! let page = jobs.operator().list_jobs(&JobListParams::default()).await?;
//! assert!(page.jobs.is_empty() && page.after.is_none());
//! jobs.operator().pause_queue("email").await?;
//! assert_eq!(jobs.operator().introspect()?.queue_paused().await?[0].queue, "email");
//! # Ok(()) }
//! ```

mod drain;

pub use drain::DrainReport;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::client::Jobs;
use crate::driver::introspect::*;
use crate::driver::introspect::{
    CountersRollupParams, JobPromoteParams, JobRemoveParams, QueuePauseParams, QueueResumeParams,
    WorkerListParams,
};
use crate::driver::{JobId, JobRecord, StepListParams, StepRecord};
use crate::error::{ErrorCode, JobError};
use crate::limits::checked_operator_actor as checked_actor;

/// One job as `jobs show` prints it: the row with its input and kept result redacted, its
/// step trace and its history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobDetail {
    /// The row; `input` keeps its shape with every value redacted, and so does `result` (the
    /// output a job declared `keep_result` stored).
    pub job: JobRecord,
    /// Every step of the run, oldest write first; outputs redacted the same way.
    pub steps: Vec<StepRecord>,
    /// Who did what to the job, newest first ([`Operator::history`]); empty on a store
    /// without an operator surface.
    #[serde(default)]
    pub history: Vec<JobHistoryEntry>,
    /// The jobs it depends on and the jobs depending on it, the job that invoked it, the jobs
    /// it invoked, and its batch ([`Jobs::links`]).
    #[serde(default)]
    pub links: crate::driver::JobLinks,
    /// How its batch stands, when it is a batch's member or callback.
    #[serde(default)]
    pub batch: Option<crate::batch::BatchReport>,
}

/// A payload's shape without its values: every string, number and boolean becomes the name of
/// its type, so an operator sees which fields a job carries, never what they hold.
///
/// ```
/// let v = serde_json::json!({ "email": "a@b.c", "n": [1, true], "x": null });
/// assert_eq!(
///     jobs::redact(&v),
///     serde_json::json!({ "email": "<string>", "n": ["<number>", "<bool>"], "x": null })
/// );
/// ```
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Null => Value::Null,
        Value::Bool(_) => Value::from("<bool>"),
        Value::Number(_) => Value::from("<number>"),
        Value::String(_) => Value::from("<string>"),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), redact(v))).collect())
        }
    }
}

impl Jobs {
    /// The operator's verbs: list, inspect, retry, delete and promote jobs, pause and resume
    /// queues, list workers. What the `jobs` tool, the MCP server and an admin page call.
    ///
    /// The client's actor ([`Jobs::acting_as`]) is recorded with every act on a job, in the
    /// job's history ([`Operator::history`]), and on a queue's pause; an actor over
    /// [`MAX_ACTOR_BYTES`](crate::limits::MAX_ACTOR_BYTES) is refused with `X_LIMIT_EXCEEDED`,
    /// one holding a control character with `X_VALUE_UNSTORABLE`, before anything is written.
    ///
    /// On a client scoped to a tenant ([`Jobs::for_tenant`]) the job verbs never see nor
    /// touch another tenant's rows: a list or bulk verb covers only that tenant (naming another
    /// is `X_JOB_TENANT_MISMATCH`), and another tenant's job id is refused as an unknown id is
    /// (`X_JOB_NOT_FOUND`; a cancel, `X_JOB_NOT_CANCELLABLE`), so its existence does not show.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), jobs::JobError> {
    /// use jobs::driver::introspect::JobListParams;
    /// let jobs = jobs::Jobs::memory();
    /// let acme = jobs.for_tenant("acme");
    /// let page = acme.operator().list_jobs(&JobListParams::default()).await?;
    /// assert!(page.jobs.is_empty());
    /// # Ok(()) }
    /// ```
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), jobs::JobError> {
    /// let ops = jobs::Jobs::memory().acting_as("ops@example.com");
    /// ops.operator().pause_queue("email").await?;
    /// let paused = ops.operator().introspect()?.queue_paused().await?;
    /// assert_eq!(paused[0].paused_by.as_deref(), Some("ops@example.com"));
    /// # Ok(()) }
    /// ```
    pub fn operator(&self) -> Operator<'_> {
        Operator { jobs: self }
    }
}

/// The operator's verbs over one client; from [`Jobs::operator`].
#[derive(Debug, Clone, Copy)]
pub struct Operator<'a> {
    pub(crate) jobs: &'a Jobs,
}

impl Operator<'_> {
    /// The driver's operator surface; `X_NOT_IMPLEMENTED` when it has none.
    pub fn introspect(&self) -> Result<&dyn JobIntrospection, JobError> {
        self.jobs
            .driver_part(|d| d.introspect(), "has no operator surface")
    }

    /// One page of jobs, newest first (see [`JobIntrospection::job_list`]).
    pub async fn list_jobs(&self, params: &JobListParams) -> Result<JobPage, JobError> {
        let params = JobListParams {
            tenant_id: self.tenant_filter(params.tenant_id.as_deref())?,
            ..params.clone()
        };
        self.introspect()?.job_list(&params).await
    }

    /// Re-queues up to [`MAX_BULK_ROWS`] finished rows matching `params` (see
    /// [`JobIntrospection::job_requeue_many`]), recording one history row per job moved under
    /// `params.actor`, or the client's actor when it names none.
    pub async fn requeue_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        let params = self.scoped_bulk(params)?;
        let result = self.introspect()?.job_requeue_many(&params).await?;
        self.jobs.local_wake().notify_waiters();
        Ok(result)
    }

    /// Deletes up to [`MAX_BULK_ROWS`] rows matching `params`, and their steps (see
    /// [`JobIntrospection::job_remove_many`]).
    pub async fn remove_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        let params = self.scoped_bulk(params)?;
        self.introspect()?.job_remove_many(&params).await
    }

    /// Makes up to [`MAX_BULK_ROWS`] waiting rows matching `params` due now (see
    /// [`JobIntrospection::job_promote_many`]).
    pub async fn promote_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        let params = self.scoped_bulk(params)?;
        let result = self.introspect()?.job_promote_many(&params).await?;
        self.jobs.local_wake().notify_waiters();
        Ok(result)
    }

    /// Cancels a live job (see [`Jobs::cancel`]), recording the client's actor in its history.
    pub async fn cancel(&self, id: JobId) -> Result<JobRecord, JobError> {
        self.jobs.cancel(id).await
    }

    /// Cancels a live job with a reason (see [`Jobs::cancel_with_reason`]), recorded in its
    /// history beside the client's actor.
    pub async fn cancel_with_reason(&self, id: JobId, reason: &str) -> Result<JobRecord, JobError> {
        self.jobs.cancel_with_reason(id, reason).await
    }

    /// One job's history, newest first: who requeued, cancelled, promoted or removed it, and
    /// when (at most [`DEFAULT_HISTORY_PAGE`] rows). While the job is stored, its enqueue ends
    /// the list: the job's own `created_at` and `actor` (the enqueue writes no history row), when
    /// the list has room. A removed job's rows stay until the purge of finished jobs takes them.
    /// On a client scoped to a tenant, only rows written while the job was that tenant's.
    pub async fn history(&self, id: JobId) -> Result<Vec<JobHistoryEntry>, JobError> {
        let params = JobHistoryParams {
            id,
            tenant_id: self.jobs.tenant().map(str::to_string),
            limit: Some(DEFAULT_HISTORY_PAGE),
        };
        let mut rows = self.introspect()?.job_history(&params).await?;
        if rows.len() < DEFAULT_HISTORY_PAGE as usize {
            if let Some(job) = self.jobs.job(id).await? {
                rows.push(JobHistoryEntry {
                    job_id: id,
                    at: job.created_at,
                    actor: job.actor,
                    verb: JobVerb::Enqueue.as_str().to_string(),
                    detail: None,
                });
            }
        }
        Ok(rows)
    }

    /// The client's actor, checked: within its limit and printable.
    fn actor(&self) -> Result<Option<String>, JobError> {
        checked_actor(self.jobs.actor())
    }

    /// The tenant a list or bulk verb filters on: the one it names, on an unscoped client; the
    /// client's on a scoped one, where naming another is `X_JOB_TENANT_MISMATCH`.
    fn tenant_filter(&self, named: Option<&str>) -> Result<Option<String>, JobError> {
        match (self.jobs.tenant(), named) {
            (None, named) => Ok(named.map(str::to_string)),
            (Some(scope), None) => Ok(Some(scope.to_string())),
            (Some(scope), Some(named)) if scope == named => Ok(Some(scope.to_string())),
            (Some(_), Some(_)) => Err(JobError::new(
                ErrorCode::JobTenantMismatch,
                "the operator verb names a tenant other than the one its client is scoped to",
            )
            .with_fix("leave the tenant out (the client's scope applies), or use a client scoped to that tenant")),
        }
    }

    fn scoped_bulk(&self, params: &JobBulkParams) -> Result<JobBulkParams, JobError> {
        let actor = match &params.actor {
            Some(actor) => checked_actor(Some(actor))?,
            None => self.actor()?,
        };
        Ok(JobBulkParams {
            tenant_id: self.tenant_filter(params.tenant_id.as_deref())?,
            actor,
            ..params.clone()
        })
    }

    /// On a scoped client, refuses an id of another tenant's row as an unknown id is refused:
    /// the row's tenant never changes, so the verb that follows acts on a row of this tenant.
    async fn visible(&self, id: JobId) -> Result<(), JobError> {
        if self.jobs.tenant().is_some() && self.jobs.job(id).await?.is_none() {
            return Err(not_found(id));
        }
        Ok(())
    }

    /// One job with its step trace, its input, kept result and step outputs redacted;
    /// `X_JOB_NOT_FOUND` for an unknown id.
    pub async fn inspect_job(&self, id: JobId) -> Result<JobDetail, JobError> {
        let mut job = self.jobs.job(id).await?.ok_or_else(|| not_found(id))?;
        job.input = redact(&job.input);
        job.result = job.result.as_ref().map(redact);
        let mut steps = self
            .jobs
            .driver()
            .step_list(&StepListParams { run_id: job.run_id })
            .await?;
        steps.sort_by(|a, b| (a.updated_at, &a.name).cmp(&(b.updated_at, &b.name)));
        for step in &mut steps {
            step.output = step.output.as_ref().map(redact);
        }
        let history = match self.history(id).await {
            Ok(history) => history,
            Err(e) if e.is(ErrorCode::NotImplemented) => Vec::new(),
            Err(e) => return Err(e),
        };
        let links = self.jobs.links(id).await?;
        let batch = match links.batch {
            Some(batch) => Some(self.jobs.batch_report(batch).await?),
            None => None,
        };
        Ok(JobDetail {
            job,
            steps,
            history,
            links,
            batch,
        })
    }

    /// Re-queues one finished job, optionally from a step (see [`JobIntrospection::job_requeue`]).
    pub async fn requeue(&self, id: JobId, from_step: Option<&str>) -> Result<JobRecord, JobError> {
        let params = JobRequeueParams {
            id,
            from_step: from_step.map(str::to_string),
            actor: self.actor()?,
            now: self.jobs.now(),
        };
        self.visible(id).await?;
        let row = self.introspect()?.job_requeue(&params).await?;
        self.jobs.local_wake().notify_waiters();
        Ok(row)
    }

    /// Deletes one job that is not running, and its steps; its history (with this `remove`)
    /// stays until the purge of finished jobs takes it.
    pub async fn remove(&self, id: JobId) -> Result<JobRecord, JobError> {
        let params = JobRemoveParams {
            id,
            actor: self.actor()?,
            now: self.jobs.now(),
        };
        self.visible(id).await?;
        self.introspect()?.job_remove(&params).await
    }

    /// Makes a job waiting on its run time due now.
    pub async fn promote(&self, id: JobId) -> Result<JobRecord, JobError> {
        let params = JobPromoteParams {
            id,
            actor: self.actor()?,
            now: self.jobs.now(),
        };
        self.visible(id).await?;
        let row = self.introspect()?.job_promote(&params).await?;
        self.jobs.local_wake().notify_waiters();
        Ok(row)
    }

    /// Pauses a queue: no worker claims from it from its next claim on. The pause keeps the
    /// client's actor (`paused_by`); a second pause keeps the first's.
    pub async fn pause_queue(&self, queue: &str) -> Result<(), JobError> {
        let actor = self.actor()?;
        self.introspect()?
            .queue_pause(&QueuePauseParams {
                queue,
                actor: actor.as_deref(),
                now: self.jobs.now(),
            })
            .await
    }

    /// Resumes a queue: `true` when it was paused.
    pub async fn resume_queue(&self, queue: &str) -> Result<bool, JobError> {
        let resumed = self
            .introspect()?
            .queue_resume(&QueueResumeParams {
                queue,
                now: self.jobs.now(),
            })
            .await?;
        self.jobs.local_wake().notify_waiters();
        Ok(resumed)
    }

    /// Refreshes the queue gauges from `queue_stats` and renders every metric as Prometheus
    /// exposition text (the body of a `/metrics` endpoint). With an outbox installed
    /// ([`Jobs::with_outbox`]) the outbox's gauges follow, read from its store by this call
    /// ([`OUTBOX_METRIC_NAMES`](crate::telemetry::OUTBOX_METRIC_NAMES)); a failed read of
    /// either store is this call's error.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), jobs::JobError> {
    /// use jobs::driver::MemoryOutbox;
    /// use jobs::outbox::OutboxMode;
    ///
    /// let jobs = jobs::Jobs::memory();
    /// let text = jobs.operator().metrics_text().await?;
    /// assert!(text.contains("# TYPE queue_depth gauge"));
    /// assert!(!text.contains("outbox_backlog"));
    ///
    /// let jobs = jobs.with_outbox(MemoryOutbox::new(), OutboxMode::Optional);
    /// let text = jobs.operator().metrics_text().await?;
    /// assert!(text.contains("\noutbox_backlog 0\n"));
    /// # Ok(()) }
    /// ```
    pub async fn metrics_text(&self) -> Result<String, JobError> {
        let stats = self.jobs.stats().await?;
        self.jobs.metrics().observe_queues(&stats);
        let mut text = self.jobs.metrics().render_prometheus();
        if let Some(outbox) = self.jobs.outbox() {
            let outbox = outbox.outbox_stats().await?;
            text.push_str(&crate::telemetry::render_outbox(&outbox, self.jobs.now()));
        }
        Ok(text)
    }

    /// The live workers.
    pub async fn workers(&self) -> Result<Vec<WorkerRow>, JobError> {
        self.introspect()?
            .worker_list(&WorkerListParams {
                now: self.jobs.now(),
            })
            .await
    }

    /// Folds the counters past their tier; the scheduler's leader runs it once a minute.
    pub async fn rollup_counters(&self) -> Result<u64, JobError> {
        self.introspect()?
            .counters_rollup(&CountersRollupParams {
                now: self.jobs.now(),
            })
            .await
    }
}
