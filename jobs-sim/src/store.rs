//! The store as one simulated process sees it: every call to the shared memory driver goes
//! through the port ([`JobDriver`], [`LeaseStore`], [`SchedulerStore`]) with a fault drawn from
//! the run's generator (delayed, failed before it applies, applied with its reply lost,
//! answered late), and is noted in the trace.
//!
//! A call's effect on the store and the observations made of it happen in one poll (the memory
//! driver never yields, and the simulation runs on one thread), so what this layer reads just
//! before a call is the state the call met: that is how a settle landing from a worker that no
//! longer holds the claim, a lease granted over another holder, or a dedupe answered with
//! another tenant's job are caught the moment they happen.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use jobs::driver::introspect::JobIntrospection;
use jobs::driver::lease::{
    HeldLease, LeaseAcquire, LeaseHoldersParams, LeaseRenewParams, LeaseStore,
};
use jobs::driver::ledger_book::{
    LedgerBook, LedgerLine, PostingLinesParams, PostingWrite, PostingWritten,
};
use jobs::driver::scheduler_store::*;
use jobs::driver::*;
use jobs::{ErrorCode, JobError};

use crate::history::Invariant;
use crate::world::{Fault, World};

/// The port of one simulated process.
#[derive(Debug, Clone)]
pub struct FaultyStore {
    world: Arc<World>,
    process: Arc<str>,
}

impl FaultyStore {
    /// The store as `process` sees it.
    pub fn new(world: Arc<World>, process: &str) -> Self {
        FaultyStore {
            world,
            process: process.into(),
        }
    }

    fn inner(&self) -> &MemoryDriver {
        &self.world.store
    }

    /// Runs `apply` under the next fault, noting the call and its outcome in the trace.
    async fn call<T>(
        &self,
        op: &'static str,
        apply: impl Future<Output = Result<T, JobError>>,
        summary: impl Fn(&T) -> String,
    ) -> Result<T, JobError> {
        let spinning = self.world.history().spinning(crate::clock::simulated_ms());
        if spinning {
            // A livelock: this call never returns (the process wedges, as a spinning process
            // would be killed), so time moves again and the run goes on to its end.
            std::future::pending::<()>().await;
        }
        while self.world.is_frozen(&self.process) {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let fault = self.world.fault();
        {
            let mut history = self.world.history();
            history.stats.calls += 1;
            match fault {
                Fault::None => {}
                Fault::Delay(_) => history.stats.delayed += 1,
                Fault::FailBefore => history.stats.failed_before += 1,
                Fault::FailAfter => history.stats.failed_after += 1,
                Fault::ReplyDelay(_) => history.stats.reply_delayed += 1,
            }
        }
        let outcome = match fault {
            Fault::None => apply.await,
            Fault::Delay(wait) => {
                tokio::time::sleep(wait).await;
                apply.await
            }
            Fault::FailBefore => Err(unanswered(op)),
            Fault::FailAfter => {
                let _applied = apply.await;
                Err(unanswered(op))
            }
            Fault::ReplyDelay(wait) => {
                let answer = apply.await;
                tokio::time::sleep(wait).await;
                answer
            }
        };
        let said = match &outcome {
            Ok(value) => summary(value),
            Err(error) => format!("err {:?}", error.code()),
        };
        self.world
            .history()
            .note(|| format!("{} {op} {fault:?} -> {said}", self.process));
        outcome
    }

    /// Job `id`'s row, read past the faults.
    async fn row(&self, id: JobId) -> Option<JobRecord> {
        self.inner()
            .job_get(&JobGetParams { id })
            .await
            .ok()
            .flatten()
    }

    /// Whether `by` holds job `id`'s claim right now (what a fenced write must check).
    async fn holds(&self, id: JobId, by: &ClaimIdentity) -> bool {
        self.row(id).await.is_some_and(|r| {
            r.state == JobState::Running
                && r.claimed_by.as_deref() == Some(&*by.worker_id)
                && r.claims == by.claim
        })
    }

    /// A fenced write landed: it must have come from the claim's holder.
    fn check_fence(&self, held: bool, landed: bool, what: &str, id: JobId) {
        if landed && !held {
            self.world.history().violated(
                Invariant::FencedSettles,
                format!(
                    "{what} of job {id} landed from {}, which no longer held its claim",
                    self.process
                ),
            );
        }
    }

    /// Notes a completion; a run completed twice is a violation.
    async fn completed(&self, id: JobId) {
        let run = self.row(id).await.map(|r| r.run_id).unwrap_or_default();
        let mut history = self.world.history();
        let count = history.completions.entry((id, run)).or_insert(0);
        *count += 1;
        let count = *count;
        if count > 1 {
            history.violated(
                Invariant::CompletedOnce,
                format!("run {run} of job {id} completed {count} times"),
            );
        }
    }

    /// An enqueue's answer must name a job of the request's own tenant.
    async fn check_tenant(&self, request: &EnqueueRequest, answer: &EnqueueResult) {
        let Some(row) = self.row(answer.id).await else {
            return;
        };
        let asked = request.tenant_id.as_deref().unwrap_or("");
        let got = row.tenant_id.as_deref().unwrap_or("");
        if asked != got {
            self.world.history().violated(
                Invariant::DedupeKeepsTenants,
                format!(
                    "an enqueue of `{}` for tenant `{asked}` was answered with job {} of tenant `{got}`",
                    request.name, answer.id
                ),
            );
        }
    }
}

fn unanswered(op: &str) -> JobError {
    JobError::new(
        ErrorCode::DriverUnavailable,
        format!("the simulated store did not answer `{op}`"),
    )
}

fn landed(l: &bool) -> String {
    l.to_string()
}

#[async_trait]
impl JobDriver for FaultyStore {
    fn name(&self) -> &'static str {
        "simulated"
    }

    fn lease_store(&self) -> Option<&dyn LeaseStore> {
        Some(self)
    }

    fn scheduler_store(&self) -> Option<&dyn SchedulerStore> {
        Some(self)
    }

    fn ledger_book(&self) -> Option<&dyn LedgerBook> {
        Some(self)
    }

    fn introspect(&self) -> Option<&dyn JobIntrospection> {
        self.inner().introspect()
    }

    fn batches_acks(&self) -> bool {
        self.inner().batches_acks()
    }

    fn gathers_claims(&self) -> bool {
        self.inner().gathers_claims()
    }

    async fn job_enqueue(&self, request: &EnqueueRequest) -> Result<EnqueueResult, JobError> {
        let apply = async {
            let answer = self.inner().job_enqueue(request).await?;
            self.check_tenant(request, &answer).await;
            Ok(answer)
        };
        self.call("enqueue", apply, |a| {
            format!("{} deduped={}", a.id, a.deduped)
        })
        .await
    }

    async fn job_enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        let apply = async {
            let answers = self.inner().job_enqueue_many(requests).await?;
            for (request, answer) in requests.iter().zip(&answers) {
                self.check_tenant(request, answer).await;
            }
            Ok(answers)
        };
        self.call("enqueue_many", apply, |a| format!("{} jobs", a.len()))
            .await
    }

    async fn job_claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
        self.call("claim", self.inner().job_claim(params), |c| {
            let ids: Vec<String> = c.jobs.iter().map(|j| j.id.to_string()).collect();
            format!("[{}]", ids.join(" "))
        })
        .await
    }

    async fn job_ack(&self, params: &AckParams) -> Result<bool, JobError> {
        let apply = async {
            let held = self.holds(params.job_id, &params.by).await;
            let landed = self.inner().job_ack(params).await?;
            self.check_fence(held, landed, "an ack", params.job_id);
            if landed {
                self.completed(params.job_id).await;
            }
            Ok(landed)
        };
        self.call("ack", apply, landed).await
    }

    async fn job_ack_many(&self, params: &[AckParams]) -> Result<Vec<bool>, JobError> {
        let apply = async {
            let mut held = Vec::with_capacity(params.len());
            for p in params {
                held.push(self.holds(p.job_id, &p.by).await);
            }
            let landed = self.inner().job_ack_many(params).await?;
            for ((p, held), landed) in params.iter().zip(held).zip(&landed) {
                self.check_fence(held, *landed, "an ack", p.job_id);
                if *landed {
                    self.completed(p.job_id).await;
                }
            }
            Ok(landed)
        };
        self.call("ack_many", apply, |l| format!("{l:?}")).await
    }

    async fn job_nack(&self, params: &NackParams) -> Result<bool, JobError> {
        let apply = async {
            let held = self.holds(params.job_id, &params.by).await;
            let landed = self.inner().job_nack(params).await?;
            self.check_fence(held, landed, "a nack", params.job_id);
            Ok(landed)
        };
        self.call("nack", apply, landed).await
    }

    async fn job_purge(&self, params: &JobPurgeParams) -> Result<u64, JobError> {
        self.call("purge", self.inner().job_purge(params), u64::to_string)
            .await
    }

    async fn job_heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError> {
        let apply = async {
            let held = self.holds(params.job_id, &params.by).await;
            let landed = self.inner().job_heartbeat(params).await?;
            self.check_fence(held, landed, "a heartbeat", params.job_id);
            Ok(landed)
        };
        self.call("heartbeat", apply, landed).await
    }

    async fn job_progress(&self, params: &ProgressParams) -> Result<bool, JobError> {
        let apply = async {
            let held = self.holds(params.job_id, &params.by).await;
            let landed = self.inner().job_progress(params).await?;
            self.check_fence(held, landed, "a progress write", params.job_id);
            Ok(landed)
        };
        self.call("progress", apply, landed).await
    }

    async fn job_get(&self, params: &JobGetParams) -> Result<Option<JobRecord>, JobError> {
        self.call("get", self.inner().job_get(params), |r| {
            r.as_ref()
                .map_or("none".into(), |r| format!("{:?}", r.state))
        })
        .await
    }

    async fn job_release_pending(&self, now: jobs::clock::Timestamp) -> Result<(), JobError> {
        self.call(
            "release_pending",
            self.inner().job_release_pending(now),
            |_| String::new(),
        )
        .await
    }

    async fn job_links(&self, id: JobId) -> Result<JobLinks, JobError> {
        self.call("links", self.inner().job_links(id), |_| String::new())
            .await
    }

    async fn job_group_join(&self, params: &GroupJoinParams<'_>) -> Result<GroupRecord, JobError> {
        self.call("group_join", self.inner().job_group_join(params), |_| {
            String::new()
        })
        .await
    }

    async fn job_group_get(&self, group: GroupId) -> Result<Option<GroupRecord>, JobError> {
        self.call("group_get", self.inner().job_group_get(group), |_| {
            String::new()
        })
        .await
    }

    async fn job_group_members(
        &self,
        params: &GroupMembersParams,
    ) -> Result<Vec<GroupMember>, JobError> {
        self.call(
            "group_members",
            self.inner().job_group_members(params),
            |m| m.len().to_string(),
        )
        .await
    }

    async fn job_group_wake(
        &self,
        params: &GroupWakeParams,
    ) -> Result<Option<GroupRecord>, JobError> {
        self.call("group_wake", self.inner().job_group_wake(params), |_| {
            String::new()
        })
        .await
    }

    async fn job_cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError> {
        self.call("cancel", self.inner().job_cancel(params), |r| {
            format!("{:?}", r.state)
        })
        .await
    }

    async fn queue_stats(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        self.call("queue_stats", self.inner().queue_stats(params), |s| {
            s.len().to_string()
        })
        .await
    }

    async fn queue_next_due(&self, params: &NextDueParams) -> Result<Vec<QueueDue>, JobError> {
        self.call("next_due", self.inner().queue_next_due(params), |d| {
            d.len().to_string()
        })
        .await
    }

    async fn step_list(&self, params: &StepListParams) -> Result<Vec<StepRecord>, JobError> {
        self.call("step_list", self.inner().step_list(params), |s| {
            s.len().to_string()
        })
        .await
    }

    async fn step_put(&self, params: &StepPutParams<'_>) -> Result<bool, JobError> {
        let apply = async {
            let fence = params.fence;
            let held = self.holds(fence.job_id, &fence.by).await;
            let landed = self.inner().step_put(params).await?;
            self.check_fence(held, landed, "a step write", fence.job_id);
            let record = params.record;
            if landed && record.status == StepStatus::Waiting {
                let mut history = self.world.history();
                let order = history.now();
                history.waits.entry(record.run_id).or_insert(order);
            }
            if landed && record.status == StepStatus::Completed {
                let mut history = self.world.history();
                let at = history.now();
                history
                    .commits
                    .entry((record.run_id, record.name.clone()))
                    .or_insert_with(|| (record.output.clone().unwrap_or_default(), at));
            }
            Ok(landed)
        };
        self.call("step_put", apply, landed).await
    }

    async fn event_publish(&self, event: &EventPublish) -> Result<EventId, JobError> {
        let apply = async {
            let id = self.inner().event_publish(event).await?;
            let at = crate::clock::simulated_ms();
            let mut history = self.world.history();
            let order = history.now();
            let published = (order, at, event.payload.clone());
            history
                .published
                .entry(event.key.clone())
                .or_default()
                .push(published);
            Ok(id)
        };
        self.call("event_publish", apply, |_| String::new()).await
    }

    async fn event_purge(&self, params: &EventPurgeParams) -> Result<u64, JobError> {
        self.call(
            "event_purge",
            self.inner().event_purge(params),
            u64::to_string,
        )
        .await
    }

    async fn event_mark(&self) -> Result<String, JobError> {
        self.call("event_mark", self.inner().event_mark(), |_| String::new())
            .await
    }

    async fn wake_listen(&self) -> Result<Option<WakeReceiver>, JobError> {
        self.inner().wake_listen().await
    }

    async fn event_find(&self, params: &EventFindParams<'_>) -> Result<Option<JobEvent>, JobError> {
        self.call("event_find", self.inner().event_find(params), |e| {
            e.is_some().to_string()
        })
        .await
    }
}

impl FaultyStore {
    fn leases(&self) -> &dyn LeaseStore {
        self.inner()
            .lease_store()
            .expect("the memory driver keeps leases")
    }

    fn schedules(&self) -> &dyn SchedulerStore {
        self.inner()
            .scheduler_store()
            .expect("the memory driver keeps the scheduler's rows")
    }

    /// A grant (or renewal) of `lease` at `now`: no other holder may hold its slot unexpired,
    /// and no more holders than `limit` may hold the key.
    fn granted(&self, lease: &HeldLease, limit: Option<u32>, now: jobs::clock::Timestamp) {
        let mut history = self.world.history();
        let holders = history.leases.entry(lease.key.clone()).or_default();
        holders.retain(|held| held.expires_at > now && held.fence != lease.fence);
        let clash = holders
            .iter()
            .find(|held| held.slot == lease.slot && held.holder != lease.holder)
            .cloned();
        holders.retain(|held| !(held.slot == lease.slot && held.holder == lease.holder));
        holders.push(lease.clone());
        let over = limit.filter(|limit| holders.len() as u32 > *limit);
        let count = holders.len();
        if let Some(other) = clash {
            history.violated(
                Invariant::LeaseExclusive,
                format!(
                    "lease `{}` slot {} granted to {} (fence {}) while {} held it (fence {})",
                    lease.key, lease.slot, lease.holder, lease.fence, other.holder, other.fence
                ),
            );
        }
        if let Some(limit) = over {
            history.violated(
                Invariant::LeaseExclusive,
                format!(
                    "lease `{}` held by {count} holders, limit {limit}",
                    lease.key
                ),
            );
        }
    }
}

#[async_trait]
impl LeaseStore for FaultyStore {
    async fn lease_acquire(&self, params: &LeaseAcquire) -> Result<Option<HeldLease>, JobError> {
        let apply = async {
            let lease = self.leases().lease_acquire(params).await?;
            if let Some(lease) = &lease {
                self.granted(lease, Some(params.limit), params.now);
            }
            Ok(lease)
        };
        self.call("lease_acquire", apply, |l| {
            format!("{:?}", l.as_ref().map(|l| l.fence))
        })
        .await
    }

    async fn lease_renew(
        &self,
        params: &LeaseRenewParams<'_>,
    ) -> Result<Option<HeldLease>, JobError> {
        let apply = async {
            let lease = self.leases().lease_renew(params).await?;
            if let Some(lease) = &lease {
                self.granted(lease, None, params.now);
            }
            Ok(lease)
        };
        self.call("lease_renew", apply, |l| {
            format!("{:?}", l.as_ref().map(|l| l.fence))
        })
        .await
    }

    async fn lease_release(&self, lease: &HeldLease) -> Result<bool, JobError> {
        let apply = async {
            let released = self.leases().lease_release(lease).await?;
            if released {
                let mut history = self.world.history();
                if let Some(holders) = history.leases.get_mut(&lease.key) {
                    holders.retain(|held| held.fence != lease.fence);
                }
            }
            Ok(released)
        };
        self.call("lease_release", apply, landed).await
    }

    async fn lease_holders(
        &self,
        params: &LeaseHoldersParams<'_>,
    ) -> Result<Vec<HeldLease>, JobError> {
        self.call("lease_holders", self.leases().lease_holders(params), |h| {
            h.len().to_string()
        })
        .await
    }
}

#[async_trait]
impl SchedulerStore for FaultyStore {
    async fn scheduler_lead(&self, params: &SchedulerLeadParams) -> Result<bool, JobError> {
        self.call(
            "scheduler_lead",
            self.schedules().scheduler_lead(params),
            landed,
        )
        .await
    }

    async fn scheduler_resign(&self, params: &SchedulerResignParams) -> Result<(), JobError> {
        self.call(
            "scheduler_resign",
            self.schedules().scheduler_resign(params),
            |_| String::new(),
        )
        .await
    }

    async fn scheduler_leader(
        &self,
        params: &SchedulerLeaderParams,
    ) -> Result<Option<SchedulerLeader>, JobError> {
        self.call(
            "scheduler_leader",
            self.schedules().scheduler_leader(params),
            |l| l.is_some().to_string(),
        )
        .await
    }

    async fn task_watermarks(
        &self,
        params: &TaskWatermarksParams,
    ) -> Result<Vec<TaskWatermark>, JobError> {
        self.call(
            "task_watermarks",
            self.schedules().task_watermarks(params),
            |w| w.len().to_string(),
        )
        .await
    }

    async fn task_fire(&self, params: &TaskFireParams) -> Result<TaskFireResult, JobError> {
        let apply = async {
            let fired = self.schedules().task_fire(params).await?;
            if fired.fired {
                if let Some(occurrence) = params.occurrence {
                    let mut history = self.world.history();
                    let key = (params.task.clone(), occurrence.to_rfc3339());
                    let count = history.fires.entry(key).or_insert(0);
                    *count += 1;
                    let count = *count;
                    if count > 1 {
                        history.violated(
                            Invariant::CronFiresOnce,
                            format!(
                                "task `{}` fired its {occurrence} occurrence {count} times",
                                params.task
                            ),
                        );
                    }
                }
            }
            Ok(fired)
        };
        self.call("task_fire", apply, |f| f.fired.to_string()).await
    }

    async fn task_pause(&self, params: &TaskPauseParams) -> Result<(), JobError> {
        self.call("task_pause", self.schedules().task_pause(params), |_| {
            String::new()
        })
        .await
    }

    async fn task_resume(&self, params: &TaskResumeParams) -> Result<bool, JobError> {
        self.call("task_resume", self.schedules().task_resume(params), landed)
            .await
    }

    async fn task_paused(&self, params: &TaskPausedParams) -> Result<Vec<String>, JobError> {
        self.call("task_paused", self.schedules().task_paused(params), |p| {
            p.len().to_string()
        })
        .await
    }

    async fn task_fires(&self, params: &TaskFiresParams) -> Result<Vec<TaskFire>, JobError> {
        self.call("task_fires", self.schedules().task_fires(params), |f| {
            f.len().to_string()
        })
        .await
    }
}

#[async_trait]
impl LedgerBook for FaultyStore {
    async fn posting_write(&self, write: &PostingWrite) -> Result<PostingWritten, JobError> {
        let book = self
            .inner()
            .ledger_book()
            .expect("the memory driver keeps a book");
        let apply = async {
            let written = book.posting_write(write).await?;
            let posting = (
                write.ledger.clone(),
                write.tenant.clone(),
                write.key.clone(),
            );
            self.world.history().postings.insert(posting);
            Ok(written)
        };
        self.call("posting_write", apply, |w| format!("{w:?}"))
            .await
    }

    async fn posting_lines(
        &self,
        params: &PostingLinesParams,
    ) -> Result<Vec<LedgerLine>, JobError> {
        let book = self
            .inner()
            .ledger_book()
            .expect("the memory driver keeps a book");
        self.call("posting_lines", book.posting_lines(params), |l| {
            l.len().to_string()
        })
        .await
    }
}
