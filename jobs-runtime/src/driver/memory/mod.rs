//! The in-memory driver: the same claim, fence and settle rules as Postgres, in one process.
//! For tests, demos and the quickstart; nothing survives a restart.

// Fx hashing: the maps are keyed by ids and names this process made, and SipHash was a tenth
// of an end-to-end run's instructions.
use std::sync::Mutex;

use async_trait::async_trait;

mod backfill;
mod claim;
mod dependencies;
mod enqueue;
mod events;
mod groups;
mod introspect;
mod lease;
mod ledger_book;
mod live_keys;
mod names;
mod outbox;
mod purge;
mod reads;
mod scheduler;
mod settle;
mod state;
mod steps;
mod webhook_ledger;

pub use lease::MemoryLeaseStore;
pub use ledger_book::MemoryBook;
pub use outbox::{MemoryOutbox, MemoryOutboxTx};
pub use webhook_ledger::{MemoryWebhookLedger, MEMORY_LEDGER_RING};

use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::driver::{
    EventFindParams, JobCancelParams, JobDriver, JobGetParams, QueueStatsParams, StepListParams,
    StepPutParams, WakeReceiver, WakeSignal,
};
use crate::error::JobError;
use state::MemoryState;

/// The memory bus keeps at most this many events; the oldest are evicted first.
pub const MAX_MEMORY_EVENTS: usize = 10_000;

/// The in-memory [`JobDriver`].
///
/// ```
/// use jobs::{Jobs, driver::MemoryDriver};
/// let jobs = Jobs::new(MemoryDriver::new());
/// ```
#[derive(Debug, Default)]
pub struct MemoryDriver {
    state: Mutex<MemoryState>,
    scheduler: Mutex<scheduler::SchedulerState>,
    leases: MemoryLeaseStore,
    backfills: backfill::MemoryBackfills,
    book: MemoryBook,
    webhooks: MemoryWebhookLedger,
    /// Set by [`MemoryDriver::without_lease_store`].
    no_lease_store: bool,
    /// The due times its writes announce to every `wake_listen`.
    dues: DueAnnouncer,
}

/// The due times a delayed enqueue, a retry or a park writes ([`WakeSignal::Due`]), told to
/// every receiver of [`JobDriver::wake_listen`]: every worker on this driver, whichever
/// [`Jobs`](crate::Jobs) client it came from.
#[derive(Debug)]
struct DueAnnouncer(tokio::sync::broadcast::Sender<(String, Timestamp)>);

impl Default for DueAnnouncer {
    fn default() -> Self {
        DueAnnouncer(tokio::sync::broadcast::channel(1024).0)
    }
}

impl DueAnnouncer {
    /// Whether anyone listens (else nothing is worth announcing).
    fn listened(&self) -> bool {
        self.0.receiver_count() > 0
    }

    /// Announces `at` for `queue` when it is after `now` (a job due now is the local wake's).
    fn announce(&self, queue: &str, at: Timestamp, now: Timestamp) {
        if at > now && self.listened() {
            let _ = self.0.send((queue.to_string(), at));
        }
    }

    /// Announces the queues of dependents a settle released (`MemoryState::released`), due
    /// at `now`, so an idle worker of any client takes them at once.
    fn released(&self, state: &mut MemoryState, now: Timestamp) {
        if state.released.is_empty() {
            return;
        }
        for queue in std::mem::take(&mut state.released) {
            if self.listened() {
                let _ = self.0.send((queue, now));
            }
        }
    }

    /// A receiver of the announcements, as a wake: only `Due` signals (the memory driver's
    /// "due now" wake is [`Jobs`](crate::Jobs)' local one), never `Live`.
    fn listen(&self) -> WakeReceiver {
        let mut announced = self.0.subscribe();
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        tokio::spawn(async move {
            loop {
                let (queue, at) = match announced.recv().await {
                    Ok(due) => due,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                if tx.send(WakeSignal::Due { queue, at }).await.is_err() {
                    return;
                }
            }
        });
        rx
    }
}

impl MemoryDriver {
    /// An empty driver.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the app's migration `version` as applied, as a SQL app's `_sqlx_migrations`
    /// would: the gate of a backfill declaring `requires` reads it
    /// ([`BackfillStore::backfill_migration_applied`](crate::driver::BackfillStore::backfill_migration_applied)).
    pub fn record_migration(&self, version: i64) {
        self.backfills.record_migration(version);
    }

    /// A memory driver that offers no lease store, like a driver that cannot hold fleet-wide
    /// slots: a worker then refuses jobs that declare `concurrency`
    /// (`X_JOB_CONCURRENCY_UNENFORCEABLE`). For testing that refusal.
    pub fn without_lease_store() -> Self {
        MemoryDriver {
            no_lease_store: true,
            ..Self::default()
        }
    }

    /// The earliest time any live job becomes claimable (a queued row's `run_at`, a running
    /// row's lease expiry). The test kit advances its clock to it.
    pub fn next_due(&self) -> Option<Timestamp> {
        let state = self.lock();
        // The earliest lease to lapse, or the earliest head of any queue and tenant.
        let running = state.running.first().map(|(at, _, _)| *at);
        let queued = state
            .queued
            .values()
            .flat_map(|tenants| tenants.values())
            .flat_map(|classes| classes.values())
            .filter_map(|rows| rows.first().map(|(at, _, _)| *at))
            .min();
        running.into_iter().chain(queued).min()
    }

    /// How many jobs are live (ready, delayed, running or suspended).
    pub fn live_count(&self) -> usize {
        self.lock()
            .jobs
            .values()
            .filter(|j| j.record.state.is_live())
            .count()
    }

    /// Every job, oldest first.
    pub fn all_jobs(&self) -> Vec<JobRecord> {
        let state = self.lock();
        let mut jobs: Vec<_> = state.jobs.values().collect();
        jobs.sort_by_key(|j| j.seq);
        jobs.into_iter().map(|j| j.row()).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        // A panic while holding the lock leaves consistent maps (every mutation is a few
        // assignments), so keep serving rather than poisoning every later call.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// [`MemoryDriver::lock`] for the worker's hot path (claims and acks): while another
    /// thread holds the state, this task yields to the runtime instead of parking its thread,
    /// so the thread runs other attempts meanwhile rather than sleeping in the kernel and
    /// paying a wake-up to come back.
    async fn lock_yielding(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        // A holder that keeps the state longer than a few turns (an operator's listing of a
        // large store) is waited for the ordinary way.
        for _ in 0..YIELDS_BEFORE_PARKING {
            match self.state.try_lock() {
                Ok(state) => return state,
                Err(std::sync::TryLockError::Poisoned(e)) => return e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
            // Awaited after the match, not in its arm: the failed try's result is gone by
            // then, so the future stays `Send`.
            tokio::task::yield_now().await;
        }
        self.lock()
    }
}

/// How many turns [`MemoryDriver::lock_yielding`] gives other tasks before it parks its
/// thread on the lock like any other caller.
const YIELDS_BEFORE_PARKING: u32 = 64;

impl MemoryState {}

#[async_trait]
impl JobDriver for MemoryDriver {
    fn name(&self) -> &'static str {
        "memory"
    }

    async fn store_check(&self) -> Result<crate::driver::StoreCheck, JobError> {
        Ok(crate::driver::StoreCheck {
            pending_migrations: Vec::new(),
            settings: vec![("store".into(), "process memory".into())],
            weakness: Some("jobs live in this process's memory: its exit loses every one".into()),
        })
    }

    fn scheduler_store(&self) -> Option<&dyn super::SchedulerStore> {
        Some(self)
    }

    fn introspect(&self) -> Option<&dyn super::JobIntrospection> {
        Some(self)
    }

    fn backfill_store(&self) -> Option<&dyn super::BackfillStore> {
        Some(&self.backfills)
    }

    fn ledger_book(&self) -> Option<&dyn super::LedgerBook> {
        Some(&self.book)
    }

    fn webhook_ledger(&self) -> Option<&dyn super::WebhookLedger> {
        Some(&self.webhooks)
    }

    fn lease_store(&self) -> Option<&dyn crate::driver::lease::LeaseStore> {
        if self.no_lease_store {
            return None;
        }
        Some(&self.leases)
    }

    async fn job_enqueue(&self, request: &EnqueueRequest) -> Result<EnqueueResult, JobError> {
        self.enqueue_one(request).await
    }

    async fn job_enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        self.enqueue_many(requests).await
    }

    async fn job_claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
        self.claim(params).await
    }

    async fn job_ack(&self, params: &AckParams) -> Result<bool, JobError> {
        self.ack(params).await
    }

    fn batches_acks(&self) -> bool {
        false
    }

    async fn job_nack(&self, params: &NackParams) -> Result<bool, JobError> {
        self.nack(params).await
    }

    async fn wake_listen(&self) -> Result<Option<WakeReceiver>, JobError> {
        Ok(Some(self.dues.listen()))
    }

    async fn job_purge(&self, params: &JobPurgeParams) -> Result<u64, JobError> {
        self.purge_jobs(params).await
    }

    async fn job_heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError> {
        self.heartbeat(params).await
    }

    async fn job_progress(&self, params: &ProgressParams) -> Result<bool, JobError> {
        self.progress(params).await
    }

    async fn job_get(&self, params: &JobGetParams) -> Result<Option<JobRecord>, JobError> {
        self.read_job(params).await
    }

    async fn job_links(&self, id: JobId) -> Result<JobLinks, JobError> {
        Ok(self.lock().links(id))
    }

    async fn job_cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError> {
        self.cancel(params).await
    }

    async fn job_group_join(&self, params: &GroupJoinParams<'_>) -> Result<GroupRecord, JobError> {
        let mut state = self.lock();
        let group = state.group_join(params);
        self.dues.released(&mut state, params.now);
        Ok(group)
    }

    async fn job_group_get(&self, group: GroupId) -> Result<Option<GroupRecord>, JobError> {
        Ok(self.lock().groups.get(group))
    }

    async fn job_group_members(
        &self,
        params: &GroupMembersParams,
    ) -> Result<Vec<GroupMember>, JobError> {
        Ok(self.lock().group_members(params))
    }

    async fn job_group_wake(
        &self,
        params: &GroupWakeParams,
    ) -> Result<Option<GroupRecord>, JobError> {
        let mut state = self.lock();
        let group = state.group_wake(params);
        self.dues.released(&mut state, params.now);
        Ok(group)
    }

    async fn queue_stats(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        self.read_queue_stats(params).await
    }

    async fn queue_next_due(&self, params: &NextDueParams) -> Result<Vec<QueueDue>, JobError> {
        self.read_next_due(params).await
    }

    async fn step_list(&self, params: &StepListParams) -> Result<Vec<StepRecord>, JobError> {
        self.list_steps(params).await
    }

    async fn step_put(&self, params: &StepPutParams<'_>) -> Result<bool, JobError> {
        self.put_step(params).await
    }

    async fn event_publish(&self, event: &EventPublish) -> Result<EventId, JobError> {
        self.publish_event(event).await
    }

    async fn event_purge(&self, params: &EventPurgeParams) -> Result<u64, JobError> {
        self.purge_events(params).await
    }

    async fn event_mark(&self) -> Result<String, JobError> {
        self.mark_events().await
    }

    async fn event_find(&self, params: &EventFindParams<'_>) -> Result<Option<JobEvent>, JobError> {
        self.find_event(params).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::driver::test_records::{claim_one, request};

    /// A group outlives its waiter until every member is counted; removing a member leaves
    /// its place, read back as gone.
    #[tokio::test]
    async fn a_group_goes_with_its_waiter() {
        let driver = MemoryDriver::new();
        let now = chrono::Utc::now();
        let mut ids = Vec::new();
        for key in ["waiter", "m1", "m2"] {
            let request = EnqueueRequest {
                idempotency_key: key.to_string(),
                ..request(now)
            };
            ids.push(driver.job_enqueue(&request).await.unwrap().id);
        }
        let group = crate::entropy::new_id();
        let join = GroupJoinParams {
            group,
            waiter: ids[0],
            parent: Some(ids[0]),
            members: &ids[1..],
            need: GroupNeed::Count(2),
            now,
        };
        driver.job_group_join(&join).await.unwrap();
        let remove = |id| crate::driver::introspect::JobRemoveParams {
            id,
            actor: None,
            now,
        };
        let operator = driver.introspect().unwrap();
        operator.job_remove(&remove(ids[1])).await.unwrap();
        let members = driver
            .job_group_members(&GroupMembersParams {
                group,
                after: None,
                limit: 10,
            })
            .await
            .unwrap();
        assert_eq!(members.len(), 2);
        assert_eq!(members[0].state, None, "its place stays, gone");
        assert_eq!(
            driver.job_group_get(group).await.unwrap().unwrap().settled,
            1
        );
        // The waiter goes: the group stays while a member is still to count, then goes.
        operator.job_remove(&remove(ids[0])).await.unwrap();
        assert!(driver.job_group_get(group).await.unwrap().is_some());
        assert_eq!(driver.job_links(ids[2]).await.unwrap().parent, Some(ids[0]));
        operator.job_remove(&remove(ids[2])).await.unwrap();
        assert_eq!(driver.job_group_get(group).await.unwrap(), None);
    }

    /// An ack that finds the state held by another thread gives its runtime thread to other
    /// tasks while it waits, instead of parking the thread on the lock: on a runtime of one
    /// thread, a task spawned after the ack runs before the state is let go.
    ///
    /// A current-thread runtime: both tasks are queued before either runs, and the ack runs
    /// first. (On a multi-thread runtime of one worker, the worker could poll the ack through
    /// all its yields before the test's thread spawned the second task: flaky under load.)
    #[test]
    fn a_waiting_ack_lets_its_thread_run_other_tasks() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let driver = Arc::new(MemoryDriver::new());
        let now = chrono::Utc::now();
        let job = runtime.block_on(async {
            driver.job_enqueue(&request(now)).await.expect("enqueued");
            let params = claim_one(now);
            driver
                .job_claim(&params)
                .await
                .expect("claimed")
                .jobs
                .remove(0)
        });

        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (ran_tx, ran_rx) = std::sync::mpsc::channel::<()>();
        let holder = {
            let driver = driver.clone();
            std::thread::spawn(move || {
                let _state = driver.lock();
                held_tx.send(()).expect("the test waits");
                // Let go once the other task ran; bounded, so a parked thread fails the test
                // below instead of hanging it.
                ran_rx.recv_timeout(Duration::from_secs(10)).is_ok()
            })
        };
        held_rx.recv().expect("the holder took the state");
        let landed = runtime.block_on(async {
            let ack = tokio::spawn({
                let driver = driver.clone();
                async move {
                    let params = AckParams {
                        job_id: job.id,
                        by: job.by,
                        result: None,
                        now,
                    };
                    driver.job_ack(&params).await
                }
            });
            tokio::spawn(async move {
                let _ = ran_tx.send(());
            });
            ack.await.expect("the ack's task")
        });
        assert!(
            holder.join().expect("the holder"),
            "the waiting ack parked the runtime's only thread"
        );
        assert!(landed.expect("the ack"), "the ack landed");
    }
}
