//! The worker: claim -> execute (steps, timeout, heartbeat, cancellation) -> settle.
//!
//! One loop per worker: a pass claims, for every queue with a free slot, as many due jobs as it
//! has free slots, in ONE driver call. Each claimed job runs on its own task; a freed slot, a
//! local enqueue and a retry due soon each kick one more pass. Idle, the wait between passes
//! doubles from `poll_interval` up to `idle_poll_max`. Every wait is on the injected clock.

mod admit;
mod builder;
mod complete;
mod execute;
mod settle;

pub use admit::{Limits, SHED_DELAY};
pub use builder::WorkerBuilder;
pub use execute::{ExecutionOutcome, JobExecution};

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use crate::client::Jobs;
use crate::driver::{ClaimParams, ClaimedJob, QueueDemand, WakeSignal};

/// The idle ceiling once a push wake is proven: 12 claims a minute at most.
pub const WOKEN_IDLE_POLL_CEILING: Duration = Duration::from_secs(5);
use crate::error::JobError;
use crate::registry::Registry;
use crate::run::StepObserver;

/// A worker: claims jobs from its queues and runs them. Build one with [`Jobs::worker`].
///
/// Drive it by hand with [`Worker::tick`] (one pass, awaiting its executions: what the test kit
/// does), or run it with [`Worker::start`] and stop it with [`WorkerHandle::shutdown`].
#[derive(Clone)]
pub struct Worker {
    shared: Arc<WorkerShared>,
}

pub(crate) struct WorkerShared {
    pub jobs: Jobs,
    pub registry: Registry,
    pub id: String,
    pub queues: Vec<String>,
    pub slots: BTreeMap<String, u32>,
    pub visibility_timeout: Duration,
    pub heartbeat_interval: Duration,
    pub poll_interval: Duration,
    pub idle_poll_max: Duration,
    pub shutdown_deadline: Duration,
    pub context: Option<Arc<dyn Any + Send + Sync>>,
    pub observer: Option<Arc<dyn StepObserver>>,
    /// Jobs in flight per queue.
    pub in_flight: Mutex<BTreeMap<String, u32>>,
    /// Total in flight, watched by the drain.
    pub in_flight_total: watch::Sender<usize>,
    /// Fired at the drain deadline: running attempts go back uncounted (`X_DRAINING`).
    pub drain: CancellationToken,
    /// One more pass, please (a slot freed, a retry came due).
    pub kick: Notify,
    /// The driver's push wake named a served queue.
    pub woken: Notify,
    /// Whether `idle_poll_max` was set by the user (then it stays the ceiling when woken).
    pub idle_poll_max_declared: bool,
    pub stats: WorkerCounters,
    /// Per-process limits, and the counters behind them.
    pub limits: Limits,
    pub limiter: admit::Limiter,
    /// The worker's registry row (the operator's `workers()`).
    pub presence: crate::operator::presence::Presence,
    /// Batches acks.
    pub completer: complete::Completer,
    /// Finished rows' retention, swept by the run loop.
    pub retention: Option<crate::Retention>,
}

/// What a worker has done since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// Bodies that completed and were acked.
    pub completed: u64,
    /// Attempts that failed and will be retried.
    pub retried: u64,
    /// Runs dead-lettered.
    pub dead_lettered: u64,
    /// Runs failed for good without a dead letter.
    pub dropped: u64,
    /// Runs parked by a sleep or a wait.
    pub suspended: u64,
    /// Attempts handed back uncounted by a drain.
    pub interrupted: u64,
    /// Attempts whose claim was lost before they settled.
    pub lease_lost: u64,
    /// Claimed jobs handed back because no job of that name is registered here.
    pub deferred: u64,
    /// Claims handed back over a limit or a cap, uncounted.
    pub shed: u64,
    /// Runs refused over a busy key (`when_busy = fail`).
    pub refused: u64,
    /// Claim statements issued (an idle worker's cost).
    pub claims: u64,
}

#[derive(Default)]
pub(crate) struct WorkerCounters {
    completed: AtomicU64,
    retried: AtomicU64,
    dead_lettered: AtomicU64,
    dropped: AtomicU64,
    suspended: AtomicU64,
    interrupted: AtomicU64,
    lease_lost: AtomicU64,
    deferred: AtomicU64,
    shed: AtomicU64,
    refused: AtomicU64,
    claims: AtomicU64,
}

impl WorkerCounters {
    fn record(&self, outcome: ExecutionOutcome) {
        let counter = match outcome {
            ExecutionOutcome::Completed => &self.completed,
            ExecutionOutcome::Retried => &self.retried,
            ExecutionOutcome::DeadLettered => &self.dead_lettered,
            ExecutionOutcome::Dropped => &self.dropped,
            ExecutionOutcome::Suspended => &self.suspended,
            ExecutionOutcome::Interrupted => &self.interrupted,
            ExecutionOutcome::LeaseLost => &self.lease_lost,
            ExecutionOutcome::Deferred => &self.deferred,
            ExecutionOutcome::Shed => &self.shed,
            ExecutionOutcome::Refused => &self.refused,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> WorkerStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        WorkerStats {
            completed: get(&self.completed),
            retried: get(&self.retried),
            dead_lettered: get(&self.dead_lettered),
            dropped: get(&self.dropped),
            suspended: get(&self.suspended),
            interrupted: get(&self.interrupted),
            lease_lost: get(&self.lease_lost),
            deferred: get(&self.deferred),
            shed: get(&self.shed),
            refused: get(&self.refused),
            claims: get(&self.claims),
        }
    }
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("id", &self.shared.id)
            .field("queues", &self.shared.queues)
            .finish()
    }
}

impl Worker {
    /// This worker's id (it fences every write the worker makes).
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// The queues it serves.
    pub fn queues(&self) -> &[String] {
        &self.shared.queues
    }

    /// Counters since start.
    pub fn stats(&self) -> WorkerStats {
        self.shared.stats.snapshot()
    }

    /// One pass: claims what the free slots allow, runs every claimed job to its settle, and
    /// answers their executions. Nothing runs in the background.
    pub async fn tick(&self) -> Result<Vec<JobExecution>, JobError> {
        let claimed = self.claim().await?;
        let runs = claimed.into_iter().map(|job| self.execute(job));
        Ok(futures::future::join_all(runs).await)
    }

    /// Starts the worker loop on the tokio runtime.
    pub fn start(&self) -> WorkerHandle {
        let stop = CancellationToken::new();
        let task = tokio::spawn(self.clone().run_loop(stop.clone()));
        WorkerHandle {
            worker: self.clone(),
            stop,
            task,
        }
    }

    async fn run_loop(self, stop: CancellationToken) {
        let shared = &self.shared;
        let clock = shared.jobs.clock().clone();
        let mut idle_wait = shared.poll_interval;
        let wake_live = Arc::new(AtomicBool::new(false));
        let forwarder = self.forward_wakes(wake_live.clone()).await;
        let sweeper = self.shared.retention.map(|retention| {
            let jobs = self.shared.jobs.clone();
            tokio::spawn(async move {
                loop {
                    jobs.clock().sleep(retention.interval()).await;
                    match jobs.purge_finished(&retention).await {
                        Ok(0) => {}
                        Ok(rows) => tracing::debug!(target: "jobs.retention.swept", rows, "finished rows deleted"),
                        Err(error) => tracing::warn!(
                            target: "jobs.retention.failed",
                            code = error.code().map(|c| c.as_str()),
                            "a retention sweep failed; the next one retries"
                        ),
                    }
                }
            })
        });
        tracing::info!(target: "jobs.worker.started", worker = %shared.id, queues = ?shared.queues);
        loop {
            if stop.is_cancelled() {
                break;
            }
            crate::operator::presence::beat(shared).await;
            let claimed = match self.claim().await {
                Ok(claimed) => claimed,
                Err(error) => {
                    tracing::warn!(
                        target: "jobs.worker.claim-failed",
                        worker = %shared.id,
                        code = error.code().map(|c| c.as_str()),
                        "claim failed; polling again"
                    );
                    idle_wait = shared.poll_interval;
                    Vec::new()
                }
            };
            let wait = if claimed.is_empty() {
                let wait = idle_wait;
                idle_wait = (idle_wait * 2).min(self.idle_ceiling(&wake_live));
                wait
            } else {
                idle_wait = shared.poll_interval;
                shared.poll_interval
            };
            for job in claimed {
                let worker = self.clone();
                tokio::spawn(async move {
                    let execution = worker.execute(job).await;
                    worker.kick_when_due(&execution);
                });
            }
            let wake = shared.jobs.local_wake().notified();
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = clock.sleep(wait) => {}
                _ = shared.kick.notified() => idle_wait = shared.poll_interval,
                _ = shared.woken.notified() => idle_wait = shared.poll_interval,
                _ = wake => idle_wait = shared.poll_interval,
            }
        }
        if let Some(forwarder) = forwarder {
            forwarder.abort();
        }
        if let Some(sweeper) = sweeper {
            sweeper.abort();
        }
        crate::operator::presence::forget(shared).await;
        tracing::info!(target: "jobs.worker.stopped", worker = %shared.id);
    }

    /// The idle wait's ceiling: `idle_poll_max`, raised to [`WOKEN_IDLE_POLL_CEILING`] once the
    /// driver's push wake is proven live, unless the ceiling was set explicitly.
    fn idle_ceiling(&self, wake_live: &AtomicBool) -> Duration {
        let shared = &self.shared;
        if wake_live.load(Ordering::Relaxed) && !shared.idle_poll_max_declared {
            WOKEN_IDLE_POLL_CEILING
        } else {
            shared.idle_poll_max
        }
    }

    /// Forwards the driver's push wake: a served queue kicks a pass; `Live`/`Lost` flip the
    /// idle ceiling.
    async fn forward_wakes(
        &self,
        wake_live: Arc<AtomicBool>,
    ) -> Option<tokio::task::JoinHandle<()>> {
        let mut wakes = match self.shared.jobs.driver().wake_listen().await {
            Ok(Some(wakes)) => wakes,
            Ok(None) => return None,
            Err(error) => {
                tracing::warn!(
                    target: "jobs.wake.unavailable",
                    code = error.code().map(|c| c.as_str()),
                    "no push wake; polling only"
                );
                return None;
            }
        };
        let shared = Arc::downgrade(&self.shared);
        Some(tokio::spawn(async move {
            while let Some(signal) = wakes.recv().await {
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                match signal {
                    WakeSignal::Queue(queue) if shared.queues.contains(&queue) => {
                        shared.woken.notify_one();
                    }
                    WakeSignal::Queue(_) => {}
                    WakeSignal::Live => wake_live.store(true, Ordering::Relaxed),
                    WakeSignal::Lost => wake_live.store(false, Ordering::Relaxed),
                }
            }
        }))
    }

    /// A retry or a wake due within a minute gets a timer that kicks one pass.
    fn kick_when_due(&self, execution: &JobExecution) {
        let Some(at) = execution.resume_at else {
            return;
        };
        let clock = self.shared.jobs.clock().clone();
        if at > crate::clock::add(clock.now(), Duration::from_secs(60)) {
            return;
        }
        let shared = Arc::downgrade(&self.shared);
        tokio::spawn(async move {
            clock.sleep_until(at).await;
            if let Some(shared) = shared.upgrade() {
                shared.kick.notify_one();
            }
        });
    }

    /// ONE claim over every queue with a free slot; reserves the slots it fills.
    async fn claim(&self) -> Result<Vec<ClaimedJob>, JobError> {
        let shared = &self.shared;
        let demand: Vec<QueueDemand> = {
            let in_flight = shared.in_flight.lock().unwrap_or_else(|e| e.into_inner());
            shared
                .queues
                .iter()
                .filter_map(|queue| {
                    let used = in_flight.get(queue).copied().unwrap_or(0);
                    let free = shared.slots[queue].saturating_sub(used);
                    (free > 0).then(|| QueueDemand {
                        queue: queue.clone(),
                        limit: free,
                    })
                })
                .collect()
        };
        if demand.is_empty() {
            return Ok(Vec::new());
        }
        let params = ClaimParams {
            demand,
            worker_id: shared.id.clone(),
            visibility_timeout: shared.visibility_timeout,
            drop_exhausted: shared
                .registry
                .entries()
                .filter(|e| !e.descriptor().dead_letter)
                .map(|e| e.descriptor().name.to_string())
                .collect(),
            now: shared.jobs.now(),
        };
        shared.stats.claims.fetch_add(1, Ordering::Relaxed);
        let result = shared.jobs.driver().job_claim(&params).await?;
        for buried in result.exhausted {
            shared.jobs.metrics().record_buried(&buried);
            settle::announce_exhausted(shared, buried).await;
        }
        {
            let mut in_flight = shared.in_flight.lock().unwrap_or_else(|e| e.into_inner());
            for job in &result.jobs {
                *in_flight.entry(job.queue.clone()).or_insert(0) += 1;
            }
        }
        shared
            .in_flight_total
            .send_modify(|total| *total += result.jobs.len());
        Ok(result.jobs)
    }

    async fn execute(&self, job: ClaimedJob) -> JobExecution {
        let queue = job.queue.clone();
        let id = job.id;
        self.shared.presence.begin(id);
        let trace = crate::telemetry::RunTrace::start(&job);
        let slot = SlotRelease::new(&self.shared, &queue);
        let execution = trace
            .scope(execute::execute(&self.shared, job, &slot))
            .await;
        slot.release();
        // A shutdown waits for this: the execution, settle included, is over.
        self.shared
            .in_flight_total
            .send_modify(|total| *total = total.saturating_sub(1));
        self.shared.presence.end(id);
        self.shared.stats.record(execution.outcome);
        self.shared
            .jobs
            .metrics()
            .record_execution(&queue, &execution);

        execution
    }
}

/// A running worker loop.
#[derive(Debug)]
pub struct WorkerHandle {
    worker: Worker,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

/// What a graceful shutdown did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Attempts still running at the deadline, handed back uncounted.
    pub interrupted: usize,
}

impl WorkerHandle {
    /// The worker.
    pub fn worker(&self) -> &Worker {
        &self.worker
    }

    /// Stops claiming at once, lets running jobs finish within the worker's shutdown deadline
    /// (measured on its clock), then hands back whatever still runs, uncounted (`X_DRAINING`),
    /// so `attempts = 1` survives a deploy.
    pub async fn shutdown(self) -> ShutdownReport {
        let shared = self.worker.shared.clone();
        self.stop.cancel();
        let _ = self.task.await;
        let mut in_flight = shared.in_flight_total.subscribe();
        let clock = shared.jobs.clock().clone();
        let finished = tokio::select! {
            _ = in_flight.wait_for(|n| *n == 0) => true,
            _ = clock.sleep(shared.shutdown_deadline) => false,
        };
        if finished {
            return ShutdownReport { interrupted: 0 };
        }
        let interrupted = *in_flight.borrow();
        tracing::warn!(
            target: "jobs.worker.drain-deadline",
            worker = %shared.id,
            interrupted,
            "shutdown deadline reached; handing running jobs back uncounted"
        );
        shared.drain.cancel();
        let _ = in_flight.wait_for(|n| *n == 0).await;
        ShutdownReport { interrupted }
    }
}

/// A claimed job's worker slot. It is given back as soon as the run's verdict is known, before
/// the settle's round trip (the completer batches acks), so the next claim overlaps the settle;
/// at the latest when the execution ends. (The drain still waits for the whole execution.)
pub(crate) struct SlotRelease<'a> {
    shared: &'a WorkerShared,
    queue: &'a str,
    released: AtomicBool,
}

impl<'a> SlotRelease<'a> {
    fn new(shared: &'a WorkerShared, queue: &'a str) -> Self {
        SlotRelease {
            shared,
            queue,
            released: AtomicBool::new(false),
        }
    }

    /// Frees the slot (once) and kicks a pass to refill it.
    pub(crate) fn release(&self) {
        if self.released.swap(true, Ordering::SeqCst) {
            return;
        }
        {
            let mut in_flight = self
                .shared
                .in_flight
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(used) = in_flight.get_mut(self.queue) {
                *used = used.saturating_sub(1);
            }
        }
        self.shared.kick.notify_one();
    }
}
