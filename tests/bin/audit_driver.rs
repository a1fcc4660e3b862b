//! The claim and settle audit of a chaos worker on a store without triggers (Redis): a
//! [`JobDriver`] that forwards every call, and every sub-port, to the real driver, and records
//! in the test's side Postgres schema (`tests/support/chaos/audit_redis.sql`):
//!
//! - `claim_log`: each job a claim handed this process, with its claim ordinal, the worker id,
//!   the process (`CHAOS_APP`), and when the claim was asked and when it was answered;
//! - `settle_log`: each fenced write the driver answered as landed (`true`): ack, nack,
//!   heartbeat, progress, step, with the claim it was fenced on, the process, and when it was
//!   asked and when it was answered.
//!
//! A claim is logged before the worker sees it: when the log cannot be written the claim is
//! answered as an error (its rows lapse and are claimed again), so no write of this process
//! can land under a claim the audit lacks. A landed write is logged after the driver answers:
//! a process killed in between, or a write whose answer was lost (a cut connection, a killed
//! server), leaves it unlogged, which weakens the checks and never fails them. Times are this
//! machine's clock in microseconds, the clock every process of the test shares.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jobs::driver::*;
use jobs::sqlx::{self, AssertSqlSafe, PgPool};
use jobs::JobError;

/// Tries at writing one audit row before giving up.
const AUDIT_TRIES: u32 = 5;

/// The real driver, audited.
pub struct AuditDriver {
    inner: Arc<dyn JobDriver>,
    pool: PgPool,
    schema: String,
    app: String,
}

/// One fenced write the driver answered as landed.
struct Landed {
    job_id: JobId,
    by: ClaimIdentity,
    kind: &'static str,
    /// The nack's target state, or the step's status.
    detail: String,
    /// The step's run and name ('' for the other writes).
    run_id: String,
    step: String,
}

impl Landed {
    fn of(job_id: JobId, by: &ClaimIdentity, kind: &'static str, detail: &str) -> Landed {
        Landed {
            job_id,
            by: by.clone(),
            kind,
            detail: detail.to_string(),
            run_id: String::new(),
            step: String::new(),
        }
    }
}

/// Microseconds since the epoch on this machine's clock.
pub fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

impl AuditDriver {
    pub fn new(inner: Arc<dyn JobDriver>, pool: PgPool, schema: &str, app: &str) -> AuditDriver {
        AuditDriver {
            inner,
            pool,
            schema: schema.to_string(),
            app: app.to_string(),
        }
    }

    /// Logs the jobs one claim handed this process.
    async fn log_claims(
        &self,
        claimed: &[ClaimedJob],
        began_us: i64,
        returned_us: i64,
    ) -> Result<(), JobError> {
        if claimed.is_empty() {
            return Ok(());
        }
        let ids: Vec<JobId> = claimed.iter().map(|j| j.id).collect();
        let claims: Vec<i64> = claimed.iter().map(|j| j.by.claim).collect();
        let workers: Vec<String> = claimed.iter().map(|j| j.by.worker_id.to_string()).collect();
        let sql = format!(
            "insert into {}.claim_log (job_id, claims, worker, app, began_us, returned_us) \
             select j, c, w, $4, $5, $6 from unnest($1::uuid[], $2::bigint[], $3::text[]) as t(j, c, w)",
            self.schema
        );
        self.retrying(|| {
            sqlx::query(AssertSqlSafe(sql.clone()))
                .bind(&ids)
                .bind(&claims)
                .bind(&workers)
                .bind(&self.app)
                .bind(began_us)
                .bind(returned_us)
                .execute(&self.pool)
        })
        .await
    }

    /// Logs landed writes; a process that cannot is ended (as a SIGKILL would), so that the
    /// audit it leaves stays whole up to that write.
    async fn log_landed(&self, landed: &[Landed], began_us: i64, landed_us: i64) {
        if landed.is_empty() {
            return;
        }
        let column = |f: &dyn Fn(&Landed) -> String| landed.iter().map(f).collect::<Vec<_>>();
        let ids: Vec<JobId> = landed.iter().map(|l| l.job_id).collect();
        let claims: Vec<i64> = landed.iter().map(|l| l.by.claim).collect();
        let workers = column(&|l| l.by.worker_id.to_string());
        let kinds = column(&|l| l.kind.to_string());
        let details = column(&|l| l.detail.clone());
        let runs = column(&|l| l.run_id.clone());
        let steps = column(&|l| l.step.clone());
        let sql = format!(
            "insert into {}.settle_log \
             (job_id, claims, worker, app, kind, detail, run_id, step, began_us, landed_us) \
             select j, c, w, $8, k, d, cast(nullif(r, '') as uuid), nullif(s, ''), $9, $10 \
             from unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::text[], \
                         $6::text[], $7::text[]) as t(j, c, w, k, d, r, s)",
            self.schema
        );
        let logged = self
            .retrying(|| {
                sqlx::query(AssertSqlSafe(sql.clone()))
                    .bind(&ids)
                    .bind(&claims)
                    .bind(&workers)
                    .bind(&kinds)
                    .bind(&details)
                    .bind(&runs)
                    .bind(&steps)
                    .bind(&self.app)
                    .bind(began_us)
                    .bind(landed_us)
                    .execute(&self.pool)
            })
            .await;
        if logged.is_err() {
            eprintln!("the audit's settle log cannot be written: ending the process");
            std::process::abort();
        }
    }

    /// Runs one audit statement, a few times over a passing failure of the side database.
    async fn retrying<F, Fut>(&self, mut statement: F) -> Result<(), JobError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<jobs::sqlx::postgres::PgQueryResult, sqlx::Error>>,
    {
        let mut tries = 0;
        loop {
            tries += 1;
            match statement().await {
                Ok(_) => return Ok(()),
                Err(e) if tries >= AUDIT_TRIES => {
                    return Err(JobError::retryable(format!(
                        "the chaos audit cannot be written: {e}"
                    )))
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
}

#[async_trait]
impl JobDriver for AuditDriver {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn lease_store(&self) -> Option<&dyn lease::LeaseStore> {
        self.inner.lease_store()
    }

    fn scheduler_store(&self) -> Option<&dyn SchedulerStore> {
        self.inner.scheduler_store()
    }

    fn introspect(&self) -> Option<&dyn JobIntrospection> {
        self.inner.introspect()
    }

    fn backfill_store(&self) -> Option<&dyn BackfillStore> {
        self.inner.backfill_store()
    }

    fn ledger_book(&self) -> Option<&dyn LedgerBook> {
        self.inner.ledger_book()
    }

    fn webhook_ledger(&self) -> Option<&dyn WebhookLedger> {
        self.inner.webhook_ledger()
    }

    fn caller_transaction(&self) -> Option<&dyn CallerTransaction> {
        self.inner.caller_transaction()
    }

    fn batches_acks(&self) -> bool {
        self.inner.batches_acks()
    }

    fn gathers_claims(&self) -> bool {
        self.inner.gathers_claims()
    }

    async fn migrate(&self) -> Result<Vec<i32>, JobError> {
        self.inner.migrate().await
    }

    async fn job_enqueue(&self, request: &EnqueueRequest) -> Result<EnqueueResult, JobError> {
        self.inner.job_enqueue(request).await
    }

    async fn job_enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        self.inner.job_enqueue_many(requests).await
    }

    async fn job_claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
        let began = now_us();
        let result = self.inner.job_claim(params).await?;
        self.log_claims(&result.jobs, began, now_us()).await?;
        Ok(result)
    }

    async fn job_ack(&self, params: &AckParams) -> Result<bool, JobError> {
        let began = now_us();
        let landed = self.inner.job_ack(params).await?;
        if landed {
            let row = Landed::of(params.job_id, &params.by, "ack", "done");
            self.log_landed(&[row], began, now_us()).await;
        }
        Ok(landed)
    }

    async fn job_ack_many(&self, params: &[AckParams]) -> Result<Vec<bool>, JobError> {
        let began = now_us();
        let landed = self.inner.job_ack_many(params).await?;
        let rows: Vec<Landed> = params
            .iter()
            .zip(&landed)
            .filter(|(_, landed)| **landed)
            .map(|(p, _)| Landed::of(p.job_id, &p.by, "ack", "done"))
            .collect();
        self.log_landed(&rows, began, now_us()).await;
        Ok(landed)
    }

    async fn job_nack(&self, params: &NackParams) -> Result<bool, JobError> {
        let began = now_us();
        let landed = self.inner.job_nack(params).await?;
        if landed {
            let state = params.target.state();
            let row = Landed::of(params.job_id, &params.by, "nack", state.as_str());
            self.log_landed(&[row], began, now_us()).await;
        }
        Ok(landed)
    }

    async fn job_purge(&self, params: &JobPurgeParams) -> Result<u64, JobError> {
        self.inner.job_purge(params).await
    }

    async fn job_heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError> {
        let began = now_us();
        let landed = self.inner.job_heartbeat(params).await?;
        if landed {
            let row = Landed::of(params.job_id, &params.by, "heartbeat", "");
            self.log_landed(&[row], began, now_us()).await;
        }
        Ok(landed)
    }

    async fn job_progress(&self, params: &ProgressParams) -> Result<bool, JobError> {
        let began = now_us();
        let landed = self.inner.job_progress(params).await?;
        if landed {
            let row = Landed::of(params.job_id, &params.by, "progress", "");
            self.log_landed(&[row], began, now_us()).await;
        }
        Ok(landed)
    }

    async fn job_release_pending(&self, now: jobs::clock::Timestamp) -> Result<(), JobError> {
        self.inner.job_release_pending(now).await
    }
    async fn job_links(&self, id: JobId) -> Result<JobLinks, JobError> {
        self.inner.job_links(id).await
    }

    async fn job_get(&self, params: &JobGetParams) -> Result<Option<JobRecord>, JobError> {
        self.inner.job_get(params).await
    }

    async fn job_cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError> {
        self.inner.job_cancel(params).await
    }

    async fn job_group_join(&self, params: &GroupJoinParams<'_>) -> Result<GroupRecord, JobError> {
        self.inner.job_group_join(params).await
    }

    async fn job_group_get(&self, group: GroupId) -> Result<Option<GroupRecord>, JobError> {
        self.inner.job_group_get(group).await
    }

    async fn job_group_members(
        &self,
        params: &GroupMembersParams,
    ) -> Result<Vec<GroupMember>, JobError> {
        self.inner.job_group_members(params).await
    }

    async fn job_group_wake(
        &self,
        params: &GroupWakeParams,
    ) -> Result<Option<GroupRecord>, JobError> {
        self.inner.job_group_wake(params).await
    }

    async fn queue_stats(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        self.inner.queue_stats(params).await
    }

    async fn queue_next_due(&self, params: &NextDueParams) -> Result<Vec<QueueDue>, JobError> {
        self.inner.queue_next_due(params).await
    }

    async fn queue_depth(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        self.inner.queue_depth(params).await
    }

    async fn step_list(&self, params: &StepListParams) -> Result<Vec<StepRecord>, JobError> {
        self.inner.step_list(params).await
    }

    async fn step_put(&self, params: &StepPutParams<'_>) -> Result<bool, JobError> {
        let began = now_us();
        let landed = self.inner.step_put(params).await?;
        if landed {
            let (fence, record) = (params.fence, params.record);
            let mut row = Landed::of(fence.job_id, &fence.by, "step", record.status.as_str());
            row.run_id = record.run_id.to_string();
            row.step = record.name.clone();
            self.log_landed(&[row], began, now_us()).await;
        }
        Ok(landed)
    }

    async fn event_publish(&self, event: &EventPublish) -> Result<EventId, JobError> {
        self.inner.event_publish(event).await
    }

    async fn event_purge(&self, params: &EventPurgeParams) -> Result<u64, JobError> {
        self.inner.event_purge(params).await
    }

    async fn event_mark(&self) -> Result<String, JobError> {
        self.inner.event_mark().await
    }

    async fn wake_listen(&self) -> Result<Option<WakeReceiver>, JobError> {
        self.inner.wake_listen().await
    }

    async fn event_find(&self, params: &EventFindParams<'_>) -> Result<Option<JobEvent>, JobError> {
        self.inner.event_find(params).await
    }
}
