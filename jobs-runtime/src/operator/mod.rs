//! The operator's verbs, on the [`Operator`] handle [`Jobs::operator`] gives: what the `jobs` command-line tool, an MCP server and an
//! admin screen call. Each returns plain data that serializes to the `--json` shape.
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

/// One job as `jobs show` prints it: the row with its input redacted, and its step trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobDetail {
    /// The row; `input` keeps its shape with every value redacted.
    pub job: JobRecord,
    /// Every step of the run, oldest write first; outputs redacted the same way.
    pub steps: Vec<StepRecord>,
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
    /// [`JobIntrospection::job_requeue_many`]).
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

    /// Cancels a live job (see [`Jobs::cancel`]).
    pub async fn cancel(&self, id: JobId) -> Result<JobRecord, JobError> {
        self.jobs.cancel(id).await
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
        Ok(JobBulkParams {
            tenant_id: self.tenant_filter(params.tenant_id.as_deref())?,
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

    /// One job with its step trace, its input and step outputs redacted; `X_JOB_NOT_FOUND`
    /// for an unknown id.
    pub async fn inspect_job(&self, id: JobId) -> Result<JobDetail, JobError> {
        let mut job = self.jobs.job(id).await?.ok_or_else(|| not_found(id))?;
        job.input = redact(&job.input);
        let mut steps = self
            .jobs
            .driver()
            .step_list(&StepListParams { run_id: job.run_id })
            .await?;
        steps.sort_by(|a, b| (a.updated_at, &a.name).cmp(&(b.updated_at, &b.name)));
        for step in &mut steps {
            step.output = step.output.as_ref().map(redact);
        }
        Ok(JobDetail { job, steps })
    }

    /// Re-queues one finished job, optionally from a step (see [`JobIntrospection::job_requeue`]).
    pub async fn requeue(&self, id: JobId, from_step: Option<&str>) -> Result<JobRecord, JobError> {
        let params = JobRequeueParams {
            id,
            from_step: from_step.map(str::to_string),
            now: self.jobs.now(),
        };
        self.visible(id).await?;
        let row = self.introspect()?.job_requeue(&params).await?;
        self.jobs.local_wake().notify_waiters();
        Ok(row)
    }

    /// Deletes one job that is not running, and its steps.
    pub async fn remove(&self, id: JobId) -> Result<JobRecord, JobError> {
        self.visible(id).await?;
        self.introspect()?.job_remove(&JobRemoveParams { id }).await
    }

    /// Makes a job waiting on its run time due now.
    pub async fn promote(&self, id: JobId) -> Result<JobRecord, JobError> {
        self.visible(id).await?;
        let row = self
            .introspect()?
            .job_promote(&JobPromoteParams {
                id,
                now: self.jobs.now(),
            })
            .await?;
        self.jobs.local_wake().notify_waiters();
        Ok(row)
    }

    /// Pauses a queue: no worker claims from it from its next claim on.
    pub async fn pause_queue(&self, queue: &str) -> Result<(), JobError> {
        self.introspect()?
            .queue_pause(&QueuePauseParams {
                queue,
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
    /// exposition text (the body of a `/metrics` endpoint).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), jobs::JobError> {
    /// let jobs = jobs::Jobs::memory();
    /// let text = jobs.operator().metrics_text().await?;
    /// assert!(text.contains("# TYPE queue_depth gauge"));
    /// # Ok(()) }
    /// ```
    pub async fn metrics_text(&self) -> Result<String, JobError> {
        let stats = self.jobs.stats().await?;
        self.jobs.metrics().observe_queues(&stats);
        Ok(self.jobs.metrics().render_prometheus())
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
