//! A test kit for code that declares jobs: a memory driver, a frozen clock and a worker driven
//! pass by pass, plus a count of how many times each step's closure really ran.
//!
//! ```
//! use jobs::prelude::*;
//! use jobs::testing::TestKit;
//! use std::time::Duration;
//!
//! #[derive(Serialize, Deserialize, JsonSchema)]
//! struct Reminder { user: u64 }
//!
//! #[job(key = "remind:{user}", tenant = none)]
//! async fn remind(run: Run, input: Reminder) -> Result<(), JobError> {
//!     run.step("first", async { Ok::<_, JobError>(()) }).await?;
//!     run.sleep("3d").await?;
//!     run.step("second", async { Ok::<_, JobError>(()) }).await?;
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let kit = TestKit::new();
//! let queued = kit.enqueue::<Remind>(Reminder { user: 7 }).await;
//! kit.run_until_idle().await;                        // runs `first`, then parks for 3 days
//! assert_eq!(kit.job(queued.id).await.state, JobState::Suspended);
//! kit.advance(Duration::from_secs(3 * 86_400));
//! kit.run_until_idle().await;                        // replays `first`, runs `second`
//! assert_eq!(kit.job(queued.id).await.state, JobState::Done);
//! assert_eq!(kit.step_runs(queued.run_id, "first"), 1);
//! # }
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::client::{Enqueued, Jobs};
use crate::clock::TestClock;
use crate::driver::{
    JobDriver, JobGetParams, JobId, JobRecord, MemoryDriver, RunId, StepListParams, StepRecord,
};
use crate::job::Job;
use crate::registry::Registry;
use crate::run::StepObserver;
use crate::worker::{JobExecution, Worker, WorkerBuilder};

/// Passes after which the kit gives up on reaching idle (a job that re-queues itself forever).
const MAX_PASSES: usize = 10_000;

/// A memory driver, a [`TestClock`] and a worker, driven by hand.
pub struct TestKit {
    jobs: Jobs,
    clock: TestClock,
    driver: Arc<MemoryDriver>,
    worker: Worker,
    steps: Arc<StepCounter>,
}

#[derive(Default)]
struct StepCounter {
    runs: Mutex<HashMap<(RunId, String), u32>>,
}

impl StepObserver for StepCounter {
    fn step_executed(&self, _job_id: JobId, run_id: RunId, name: &str) {
        let mut runs = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        *runs.entry((run_id, name.to_string())).or_insert(0) += 1;
    }
}

impl std::fmt::Debug for TestKit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestKit")
            .field("clock", &self.clock)
            .field("worker", &self.worker)
            .finish()
    }
}

impl Default for TestKit {
    fn default() -> Self {
        Self::new()
    }
}

impl TestKit {
    /// A kit whose worker runs every `#[job]` linked into the test binary.
    ///
    /// # Panics
    /// When the registry is invalid (two jobs under one name).
    pub fn new() -> Self {
        Self::with_worker(|w| w)
    }

    /// A kit whose worker runs exactly the jobs in `registry`.
    pub fn with_registry(registry: Registry) -> Self {
        Self::with_worker(|w| w.registry(registry))
    }

    /// A kit whose worker is configured by `configure` (registry, queues, slots, context...).
    ///
    /// # Panics
    /// When the worker configuration is refused.
    pub fn with_worker(configure: impl FnOnce(WorkerBuilder) -> WorkerBuilder) -> Self {
        Self::build(None, configure)
    }

    /// A kit whose client and worker run in the deployment environment `environment`
    /// ([`Jobs::in_environment`]), the worker configured by `configure`.
    ///
    /// # Panics
    /// When the worker configuration is refused.
    pub fn in_environment(
        environment: &str,
        configure: impl FnOnce(WorkerBuilder) -> WorkerBuilder,
    ) -> Self {
        Self::build(Some(environment), configure)
    }

    fn build(
        environment: Option<&str>,
        configure: impl FnOnce(WorkerBuilder) -> WorkerBuilder,
    ) -> Self {
        let clock = TestClock::new();
        let driver = Arc::new(MemoryDriver::new());
        let mut jobs = Jobs::with_clock(driver.clone(), Arc::new(clock.clone()));
        if let Some(environment) = environment {
            jobs = jobs.in_environment(environment);
        }
        let steps = Arc::new(StepCounter::default());
        let worker = configure(jobs.worker().observer(steps.clone()))
            .build()
            .unwrap_or_else(|e| panic!("the test kit's worker was refused: {e}"));
        TestKit {
            jobs,
            clock,
            driver,
            worker,
            steps,
        }
    }

    /// The client (enqueue, publish events, read jobs).
    pub fn jobs(&self) -> &Jobs {
        &self.jobs
    }

    /// The frozen clock.
    pub fn clock(&self) -> &TestClock {
        &self.clock
    }

    /// The memory driver underneath.
    pub fn driver(&self) -> &MemoryDriver {
        &self.driver
    }

    /// The worker.
    pub fn worker(&self) -> &Worker {
        &self.worker
    }

    /// Enqueues job `J`.
    ///
    /// # Panics
    /// When the enqueue is refused.
    pub async fn enqueue<J: Job>(&self, input: J::Input) -> Enqueued {
        self.jobs
            .enqueue::<J>(input)
            .await
            .unwrap_or_else(|e| panic!("enqueue of `{}` refused: {e}", J::DESCRIPTOR.name))
    }

    /// Runs passes until one claims nothing; time does not move.
    pub async fn run_until_idle(&self) -> Vec<JobExecution> {
        let mut all = Vec::new();
        for _ in 0..MAX_PASSES {
            let pass = self
                .worker
                .tick()
                .await
                .unwrap_or_else(|e| panic!("a worker pass failed: {e}"));
            if pass.is_empty() {
                return all;
            }
            all.extend(pass);
        }
        panic!("the queue did not go idle within {MAX_PASSES} passes");
    }

    /// Runs until no job is live, moving the clock to each next due time (retry backoffs,
    /// sleeps, event-wait polls and timeouts) as it goes.
    pub async fn run_to_completion(&self) -> Vec<JobExecution> {
        let mut all = self.run_until_idle().await;
        for _ in 0..MAX_PASSES {
            match self.driver.next_due() {
                Some(at) => self.clock.set(at),
                None => return all,
            }
            all.extend(self.run_until_idle().await);
        }
        panic!("jobs were still live after {MAX_PASSES} clock moves");
    }

    /// Enqueues job `J` and runs to completion; answers the job's final row.
    pub async fn run<J: Job>(&self, input: J::Input) -> JobRecord {
        let queued = self.enqueue::<J>(input).await;
        self.run_to_completion().await;
        self.job(queued.id).await
    }

    /// Moves the frozen clock forward.
    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }

    /// One job's row.
    ///
    /// # Panics
    /// When there is no such job.
    pub async fn job(&self, id: JobId) -> JobRecord {
        self.driver
            .job_get(&JobGetParams { id })
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("no job with id {id}"))
    }

    /// A run's step records.
    pub async fn steps(&self, run_id: RunId) -> Vec<StepRecord> {
        self.driver
            .step_list(&StepListParams { run_id })
            .await
            .unwrap_or_default()
    }

    /// How many times step `name`'s closure really ran in `run_id` (replays are not runs).
    pub fn step_runs(&self, run_id: RunId, name: &str) -> u32 {
        let runs = self.steps.runs.lock().unwrap_or_else(|e| e.into_inner());
        runs.get(&(run_id, name.to_string())).copied().unwrap_or(0)
    }
}

/// An [`OutboxStore`](crate::driver::OutboxStore) around another that counts the relay's claims
/// and marks, and can take the wake away or stall a mark: for tests and benchmarks of a relay
/// (its idle claims a minute, a relay killed between a publish and its mark). Clones share the
/// counts.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), jobs::JobError> {
/// use jobs::driver::MemoryOutbox;
/// use jobs::outbox::OutboxRelay;
/// use jobs::testing::OutboxProbe;
///
/// let probe = OutboxProbe::new(MemoryOutbox::new());
/// let relay = OutboxRelay::builder(probe.clone(), &jobs::Jobs::memory()).build()?;
/// relay.pass().await?;
/// assert_eq!(probe.claims(), 1);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OutboxProbe {
    inner: Arc<dyn crate::driver::OutboxStore>,
    state: Arc<ProbeState>,
}

#[derive(Default)]
struct ProbeState {
    claims: std::sync::atomic::AtomicUsize,
    marks: std::sync::atomic::AtomicUsize,
    no_wake: std::sync::atomic::AtomicBool,
    stall_on_mark: std::sync::atomic::AtomicUsize,
    stalled: tokio::sync::Notify,
}

impl std::fmt::Debug for OutboxProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxProbe")
            .field("store", &self.inner.name())
            .field("claims", &self.claims())
            .finish()
    }
}

impl OutboxProbe {
    /// A probe around `store`.
    pub fn new(store: impl crate::driver::OutboxStore) -> Self {
        OutboxProbe {
            inner: Arc::new(store),
            state: Arc::default(),
        }
    }

    /// This probe, answering no wake: the relay polls.
    pub fn without_wake(self) -> Self {
        self.state
            .no_wake
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self
    }

    /// This probe, whose `n`-th mark of published rows never returns (the relay then sits
    /// between a publish and its mark until it is killed or stopped).
    pub fn stall_on_mark(self, n: usize) -> Self {
        self.state
            .stall_on_mark
            .store(n, std::sync::atomic::Ordering::SeqCst);
        self
    }

    /// Resolves once a mark stalled ([`OutboxProbe::stall_on_mark`]).
    pub async fn stalled(&self) {
        self.state.stalled.notified().await
    }

    /// Claims made through it so far.
    pub fn claims(&self) -> usize {
        self.state.claims.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Counts a mark, and never returns from the one [`OutboxProbe::stall_on_mark`] names.
    async fn mark_made(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        let mark = self.state.marks.fetch_add(1, SeqCst) + 1;
        if mark == self.state.stall_on_mark.load(SeqCst) {
            self.state.stalled.notify_waiters();
            self.state.stalled.notify_one();
            std::future::pending::<()>().await;
        }
    }
}

#[async_trait::async_trait]
impl crate::driver::OutboxStore for OutboxProbe {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn outbox_stage(
        &self,
        conn: crate::driver::caller_tx::CallerConn<'_>,
        request: &crate::driver::EnqueueRequest,
    ) -> Result<(), crate::JobError> {
        self.inner.outbox_stage(conn, request).await
    }

    async fn outbox_claim(
        &self,
        params: &crate::driver::outbox::OutboxClaimParams,
    ) -> Result<Vec<crate::driver::outbox::OutboxRecord>, crate::JobError> {
        self.state
            .claims
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.outbox_claim(params).await
    }

    async fn outbox_published(
        &self,
        settle: &crate::driver::outbox::OutboxSettle<'_>,
        rows: &[crate::driver::outbox::OutboxPublished],
    ) -> Result<u64, crate::JobError> {
        self.mark_made().await;
        self.inner.outbox_published(settle, rows).await
    }

    async fn outbox_published_then_claim(
        &self,
        settle: &crate::driver::outbox::OutboxSettle<'_>,
        rows: &[crate::driver::outbox::OutboxPublished],
        claim: &crate::driver::outbox::OutboxClaimParams,
    ) -> Result<Vec<crate::driver::outbox::OutboxRecord>, crate::JobError> {
        self.mark_made().await;
        self.state
            .claims
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner
            .outbox_published_then_claim(settle, rows, claim)
            .await
    }

    async fn outbox_release(
        &self,
        settle: &crate::driver::outbox::OutboxSettle<'_>,
        ids: &[JobId],
        failed: Option<(JobId, &str)>,
    ) -> Result<u64, crate::JobError> {
        self.inner.outbox_release(settle, ids, failed).await
    }

    async fn outbox_refused(
        &self,
        settle: &crate::driver::outbox::OutboxSettle<'_>,
        id: JobId,
        code: &str,
    ) -> Result<u64, crate::JobError> {
        self.inner.outbox_refused(settle, id, code).await
    }

    async fn outbox_stats(&self) -> Result<crate::driver::outbox::OutboxStats, crate::JobError> {
        self.inner.outbox_stats().await
    }

    async fn outbox_purge(
        &self,
        before: crate::clock::Timestamp,
        limit: u32,
    ) -> Result<u64, crate::JobError> {
        self.inner.outbox_purge(before, limit).await
    }

    async fn outbox_wake(&self) -> Result<Option<crate::driver::WakeReceiver>, crate::JobError> {
        if self.state.no_wake.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(None);
        }
        self.inner.outbox_wake().await
    }
}
