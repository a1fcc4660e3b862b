//! On-time starts of what was announced before a worker listened: a worker reads each served
//! queue's next due time when it starts (`JobDriver::queue_next_due`), and again each time its
//! push wake is proven live after being lost, and arms its due timer with it. The idle
//! workers here poll once an hour, so a job that starts within the test's bound was started by
//! the timer. Everything waits on the test clock; nothing sleeps on the wall clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobs::clock::TestClock;
use jobs::driver::*;
use jobs::prelude::*;
use jobs::{Registry, WorkerHandle};

use crate::support::wait::{job_done as done, wait_until, worker_completed as completed};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Item {
    id: u64,
}

#[job(name = "on_time_start.plain", key = "plain:{id}", tenant = none)]
async fn on_time_start_plain(_run: Run, _input: Item) -> Result<(), JobError> {
    Ok(())
}

fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.register::<OnTimeStartPlain>().expect("register");
    registry
}

const HOUR: Duration = Duration::from_secs(3600);

/// A worker of `jobs` that polls once an hour, started.
fn idle_worker(jobs: &Jobs) -> WorkerHandle {
    jobs.worker()
        .registry(registry())
        .poll_interval(HOUR)
        .idle_poll_max(HOUR)
        .build()
        .expect("worker")
        .start()
}

/// Waits until `n` timers wait on the clock: the idle loop's poll, and the due timer once a
/// due time armed it.
async fn timers(clock: &TestClock, n: usize) {
    wait_until("the worker's timers are armed", || {
        let pending = clock.pending_timers();
        async move { pending >= n }
    })
    .await;
}

/// A job delayed by another client before the worker started was announced to no one: the
/// worker reads it when it starts and starts it when due, not at its poll an hour later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_starts_a_job_delayed_before_it_listened_when_due() {
    let driver = Arc::new(MemoryDriver::new());
    let clock = TestClock::new();
    let writer = Jobs::with_clock(driver.clone(), Arc::new(clock.clone()));
    let idle = Jobs::with_clock(driver.clone(), Arc::new(clock.clone()));
    let delayed = OnTimeStartPlain::enqueue_with(
        &writer,
        Item { id: 1 },
        EnqueueOptions::new().delay(Duration::from_secs(30)),
    )
    .await
    .expect("enqueue");
    let handle = idle_worker(&idle);
    // The loop's hour-long poll and the due timer, armed on the time read at start.
    timers(&clock, 2).await;
    clock.advance(Duration::from_secs(29));
    assert_eq!(
        idle.job(delayed.id).await.unwrap().unwrap().state,
        JobState::Delayed,
        "not before it is due"
    );
    clock.advance(Duration::from_secs(1));
    done(&idle, delayed.id).await;
    completed(&handle, 1).await;
    handle.shutdown().await;
}

/// A memory store behind a push wake the test drives (`Lost`, `Live`), counting the next due
/// reads: a wake that comes back makes the worker read again what it may have missed.
struct Relistening {
    rows: MemoryDriver,
    wake: Mutex<Option<WakeReceiver>>,
    reads: AtomicUsize,
}

#[async_trait::async_trait]
impl JobDriver for Relistening {
    fn name(&self) -> &'static str {
        "relistening"
    }

    fn introspect(&self) -> Option<&dyn JobIntrospection> {
        self.rows.introspect()
    }

    fn batches_acks(&self) -> bool {
        false
    }

    async fn wake_listen(&self) -> Result<Option<WakeReceiver>, JobError> {
        Ok(self.wake.lock().unwrap().take())
    }

    async fn queue_next_due(&self, params: &NextDueParams) -> Result<Vec<QueueDue>, JobError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.rows.queue_next_due(params).await
    }

    async fn job_enqueue(&self, request: &EnqueueRequest) -> Result<EnqueueResult, JobError> {
        self.rows.job_enqueue(request).await
    }

    async fn job_claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
        self.rows.job_claim(params).await
    }

    async fn job_ack(&self, params: &AckParams) -> Result<bool, JobError> {
        self.rows.job_ack(params).await
    }

    async fn job_nack(&self, params: &NackParams) -> Result<bool, JobError> {
        self.rows.job_nack(params).await
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

/// A [`Relistening`] store, a writer and an idle worker on it, both on one test clock, and the
/// sender that drives the worker's wake.
struct Relistened {
    wake: tokio::sync::mpsc::Sender<WakeSignal>,
    driver: Arc<Relistening>,
    clock: TestClock,
    writer: Jobs,
    idle: Jobs,
    handle: WorkerHandle,
}

impl Relistened {
    /// Starts the worker; answers once its first pass found nothing and its wake was lost (its
    /// poll is an hour away).
    async fn lost() -> Relistened {
        let (wake, receiver) = tokio::sync::mpsc::channel(8);
        let driver = Arc::new(Relistening {
            rows: MemoryDriver::new(),
            wake: Mutex::new(Some(receiver)),
            reads: AtomicUsize::new(0),
        });
        let clock = TestClock::new();
        let writer = Jobs::with_clock(driver.clone(), Arc::new(clock.clone()));
        let idle = Jobs::with_clock(driver.clone(), Arc::new(clock.clone()));
        let handle = idle_worker(&idle);
        let relistened = Relistened {
            wake,
            driver,
            clock,
            writer,
            idle,
            handle,
        };
        relistened.reads(1).await;
        timers(&relistened.clock, 1).await;
        relistened.signal(WakeSignal::Lost).await;
        relistened
    }

    async fn signal(&self, signal: WakeSignal) {
        self.wake.send(signal).await.expect("the worker listens");
    }

    /// Waits until the worker read the next due times `n` times.
    async fn reads(&self, n: usize) {
        wait_until("the worker reads the next due times", || {
            let read = self.driver.reads.load(Ordering::SeqCst);
            async move { read >= n }
        })
        .await;
    }

    /// Waits until the worker ran job `id` (its only one) and stops it.
    async fn ran(self, id: JobId) {
        done(&self.idle, id).await;
        completed(&self.handle, 1).await;
        self.handle.shutdown().await;
    }
}

/// A job delayed while the worker's wake was lost (its announcement went nowhere) starts when
/// due: the wake's `Live` after the loss makes the worker read the next due times again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_that_comes_back_reads_the_due_times_it_missed() {
    let r = Relistened::lost().await;
    let delayed = OnTimeStartPlain::enqueue_with(
        &r.writer,
        Item { id: 2 },
        EnqueueOptions::new().delay(Duration::from_secs(30)),
    )
    .await
    .expect("enqueue");
    r.signal(WakeSignal::Live).await;
    r.reads(2).await;
    timers(&r.clock, 2).await;
    r.clock.advance(Duration::from_secs(30));
    r.ran(delayed.id).await;
}

/// A job enqueued due now while the worker's wake was lost was announced to no one: the wake's
/// `Live` after the loss kicks a claim pass, so it starts then, not at the worker's poll an hour
/// later (the test clock never moves).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wake_that_comes_back_claims_what_came_due_while_it_was_lost() {
    let r = Relistened::lost().await;
    let now = OnTimeStartPlain::enqueue(&r.writer, Item { id: 3 })
        .await
        .expect("enqueue");
    assert_eq!(
        r.idle.job(now.id).await.unwrap().unwrap().state,
        JobState::Ready,
        "nothing announced it"
    );
    r.signal(WakeSignal::Live).await;
    r.ran(now.id).await;
}
