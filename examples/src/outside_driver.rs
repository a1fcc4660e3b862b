//! A driver written outside the `jobs` crate, against its public port only: what a fourth
//! driver starts from. It keeps its rows in a [`MemoryDriver`] and answers every port method by
//! handing the call on, so it passes the conformance suite exactly when the port is complete
//! from outside (`examples/tests/outside_driver.rs` runs the suite against it). A real driver
//! replaces each hand-off with its store's own operation, and reuses the port's shared rules
//! (`jobs::driver::introspect::check_list`, `page_of`, ...) where it re-expresses them.
//!
//! It registers its URL scheme, `outside:`, so `Jobs::open("outside:")`, the `jobs` tool and
//! the MCP server open it like a built-in store.

use std::sync::Arc;

use async_trait::async_trait;
use jobs::driver::url::{BoxFuture, DriverScheme, OpenRequest};
use jobs::driver::*;
use jobs::JobError;

/// The driver: a [`MemoryDriver`] behind the port.
#[derive(Debug, Default)]
pub struct OutsideDriver {
    rows: MemoryDriver,
}

impl OutsideDriver {
    /// An empty store.
    pub fn new() -> Self {
        OutsideDriver::default()
    }
}

fn open(_request: OpenRequest<'_>) -> BoxFuture<'_, Result<Arc<dyn JobDriver>, JobError>> {
    Box::pin(async { Ok(Arc::new(OutsideDriver::new()) as Arc<dyn JobDriver>) })
}

jobs::register_driver_scheme!(DriverScheme {
    schemes: &["outside"],
    open,
});

#[async_trait]
impl JobDriver for OutsideDriver {
    fn name(&self) -> &'static str {
        "outside"
    }

    fn lease_store(&self) -> Option<&dyn lease::LeaseStore> {
        self.rows.lease_store()
    }

    fn scheduler_store(&self) -> Option<&dyn SchedulerStore> {
        self.rows.scheduler_store()
    }

    fn introspect(&self) -> Option<&dyn JobIntrospection> {
        self.rows.introspect()
    }

    fn backfill_store(&self) -> Option<&dyn BackfillStore> {
        self.rows.backfill_store()
    }

    fn ledger_book(&self) -> Option<&dyn LedgerBook> {
        self.rows.ledger_book()
    }

    fn webhook_ledger(&self) -> Option<&dyn WebhookLedger> {
        self.rows.webhook_ledger()
    }

    async fn store_check(&self) -> Result<jobs::driver::StoreCheck, JobError> {
        self.rows.store_check().await
    }

    async fn job_enqueue(&self, request: &EnqueueRequest) -> Result<EnqueueResult, JobError> {
        self.rows.job_enqueue(request).await
    }

    async fn job_enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        self.rows.job_enqueue_many(requests).await
    }

    async fn job_claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
        self.rows.job_claim(params).await
    }

    async fn job_ack(&self, params: &AckParams) -> Result<bool, JobError> {
        self.rows.job_ack(params).await
    }

    fn batches_acks(&self) -> bool {
        self.rows.batches_acks()
    }

    async fn job_nack(&self, params: &NackParams) -> Result<bool, JobError> {
        self.rows.job_nack(params).await
    }

    async fn wake_listen(&self) -> Result<Option<WakeReceiver>, JobError> {
        self.rows.wake_listen().await
    }

    async fn job_purge(&self, params: &JobPurgeParams) -> Result<u64, JobError> {
        self.rows.job_purge(params).await
    }

    async fn job_heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError> {
        self.rows.job_heartbeat(params).await
    }

    async fn job_progress(&self, params: &ProgressParams) -> Result<bool, JobError> {
        self.rows.job_progress(params).await
    }

    async fn job_release_pending(&self, now: jobs::clock::Timestamp) -> Result<(), JobError> {
        self.rows.job_release_pending(now).await
    }
    async fn job_links(&self, id: JobId) -> Result<JobLinks, JobError> {
        self.rows.job_links(id).await
    }

    async fn job_get(&self, params: &JobGetParams) -> Result<Option<JobRecord>, JobError> {
        self.rows.job_get(params).await
    }

    async fn job_cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError> {
        self.rows.job_cancel(params).await
    }

    async fn job_group_join(&self, params: &GroupJoinParams<'_>) -> Result<GroupRecord, JobError> {
        self.rows.job_group_join(params).await
    }
    async fn job_group_get(&self, group: GroupId) -> Result<Option<GroupRecord>, JobError> {
        self.rows.job_group_get(group).await
    }
    async fn job_group_members(
        &self,
        params: &GroupMembersParams,
    ) -> Result<Vec<GroupMember>, JobError> {
        self.rows.job_group_members(params).await
    }
    async fn job_group_wake(
        &self,
        params: &GroupWakeParams,
    ) -> Result<Option<GroupRecord>, JobError> {
        self.rows.job_group_wake(params).await
    }

    async fn queue_stats(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        self.rows.queue_stats(params).await
    }

    async fn queue_next_due(&self, params: &NextDueParams) -> Result<Vec<QueueDue>, JobError> {
        self.rows.queue_next_due(params).await
    }

    async fn step_list(&self, params: &StepListParams) -> Result<Vec<StepRecord>, JobError> {
        self.rows.step_list(params).await
    }

    async fn step_put(&self, params: &StepPutParams<'_>) -> Result<bool, JobError> {
        self.rows.step_put(params).await
    }

    async fn event_publish(&self, event: &EventPublish) -> Result<EventId, JobError> {
        self.rows.event_publish(event).await
    }

    async fn event_purge(&self, params: &EventPurgeParams) -> Result<u64, JobError> {
        self.rows.event_purge(params).await
    }

    async fn event_mark(&self) -> Result<String, JobError> {
        self.rows.event_mark().await
    }

    async fn event_find(&self, params: &EventFindParams<'_>) -> Result<Option<JobEvent>, JobError> {
        self.rows.event_find(params).await
    }
}
