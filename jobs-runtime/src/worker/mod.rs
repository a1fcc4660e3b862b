//! The worker. An attempt is one flat pipeline, one stage per file, each a function from one
//! typed value to the next:
//!
//! ```text
//! claim   (claim.rs)   -> Claimed                 a slot reserved per job
//! admit   (admit.rs)   -> Admitted | Refused      registry, limits, the one parse, fleet slots
//! execute (execute.rs) -> Executed                the body raced to a verdict
//! settle  (settle.rs)  -> JobExecution            the one write (ack or nack), the hook, frees
//!                                                 (hook.rs tells `on_settled`)
//! ```
//!
//! One loop per worker: a pass claims, for every queue with a free slot, as many due jobs as it
//! has free slots, in ONE driver call. Each claimed job runs on its own task; a freed slot, a
//! local enqueue and a due time coming (due.rs: a retry, a park or a delayed enqueue this
//! worker wrote, its driver's wake announced, or the store answered when the worker started or
//! its wake came back) each kick one more pass, which first lets the
//! runnable attempts take a turn so it claims every slot they free (unless the driver's claims
//! cost no round trip: `JobDriver::gathers_claims`). Idle, the wait between passes doubles from
//! `poll_interval` up to `idle_poll_max`. Every wait is on the injected clock.

mod admit;
mod builder;
mod claim;
mod complete;
mod due;
mod execute;
mod fleet_slots;
mod hook;
mod keeper;
mod limiter;
mod presence;
mod queue_limits;
mod settle;

pub use crate::execution::{ExecutionOutcome, JobExecution};
pub use builder::WorkerBuilder;
pub use limiter::{Limits, SHED_DELAY};
pub use queue_limits::QueueLimits;

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use admit::Admission;
use claim::Claimed;
use settle::Ending;

use crate::client::Jobs;
use crate::driver::WakeSignal;
use crate::error::JobError;
use crate::registry::Registry;
use crate::run::StepObserver;

/// The idle ceiling once a push wake is proven: 12 claims a minute at most.
pub const WOKEN_IDLE_POLL_CEILING: Duration = Duration::from_secs(5);

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
    /// The client's deployment environment, read once at build (`Jobs::environment`).
    pub environment: Option<String>,
    pub registry: Registry,
    pub id: Arc<str>,
    pub queues: Vec<String>,
    pub slots: BTreeMap<String, u32>,
    pub visibility_timeout: Duration,
    /// How long a claim is trusted after its last renewal landed: the visibility timeout less
    /// the clock skew allowance.
    pub claim_window: Duration,
    pub heartbeat_interval: Duration,
    pub poll_interval: Duration,
    pub idle_poll_max: Duration,
    pub shutdown_deadline: Duration,
    pub context: Option<Arc<dyn Any + Send + Sync>>,
    pub observer: Option<Arc<dyn StepObserver>>,
    /// Jobs in flight per queue.
    pub in_flight: Mutex<BTreeMap<String, u32>>,
    /// The tenant this worker's last claim served last: its next claim's turns start after it.
    pub fair_cursor: Mutex<String>,
    /// Total in flight, watched by the drain.
    pub in_flight_total: watch::Sender<usize>,
    /// Fired at the drain deadline: running attempts go back uncounted (`X_DRAINING`).
    pub drain: CancellationToken,
    /// One more pass, please (a slot freed, a retry came due).
    pub kick: Notify,
    /// The driver's push wake named a served queue.
    pub woken: Notify,
    /// The due times heard of (this worker's retries and parks, the driver's due wakes): a
    /// timer kicks a pass at the earliest.
    pub dues: Arc<due::DueTimes>,
    /// Whether `idle_poll_max` was set by the user (then it stays the ceiling when woken).
    pub idle_poll_max_declared: bool,
    pub stats: WorkerCounters,
    /// Per-process limits, and the counters behind them.
    pub limits: Limits,
    /// Fleet-wide limits per queue (held in the lease store).
    pub queue_limits: BTreeMap<String, QueueLimits>,
    pub limiter: limiter::Limiter,
    /// The worker's registry row (the operator's `workers()`).
    pub presence: presence::Presence,
    /// Batches acks.
    pub completer: complete::Completer,
    /// Renews every running attempt's claim.
    pub keeper: keeper::Keeper,
    /// Finished rows' retention, swept by the run loop.
    pub retention: Option<crate::Retention>,
    /// The outbox relay started and stopped with the loop.
    pub outbox_relay: Option<crate::outbox::OutboxRelay>,
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
    /// Jobs discarded past their `expires_in`, never run.
    pub expired: u64,
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
    expired: AtomicU64,
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
            ExecutionOutcome::Expired => &self.expired,
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
            expired: get(&self.expired),
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
        let runs = claimed.into_iter().map(|claimed| self.attempt(claimed));
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
            relay: self.shared.outbox_relay.as_ref().map(|relay| relay.start()),
        }
    }

    async fn run_loop(self, stop: CancellationToken) {
        let shared = &self.shared;
        let clock = shared.jobs.clock().clone();
        let gathers_claims = shared.jobs.driver().gathers_claims();
        let mut idle_wait = shared.poll_interval;
        let wake_live = Arc::new(AtomicBool::new(false));
        let forwarder = self.forward_wakes(wake_live.clone()).await;
        let due_timer = due::spawn(&self.shared);
        // What was announced before this worker listened: read once the wake listens, so a
        // time announced after the read is heard.
        due::read_from_store(&self.shared);
        let sweeper = self.shared.retention.map(|retention| {
            let jobs = self.shared.jobs.clone();
            tokio::spawn(async move {
                loop {
                    jobs.clock().sleep(retention.interval()).await;
                    match jobs.operator().purge_finished(&retention).await {
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
        let mut beating = None;
        loop {
            if stop.is_cancelled() {
                break;
            }
            presence::beat_beside(&self.shared, &mut beating);
            // The attempts ready to run (those the last pass spawned, those settling) take
            // their turn first, so this pass sees every slot they free: without it a worker of
            // short jobs alternated half-full claims (Postgres, 16 slots: 8.2 rows a claim).
            if gathers_claims {
                tokio::task::yield_now().await;
            }
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
            for claimed in claimed {
                let worker = self.clone();
                // Boxed: a task moves its future several times while it spawns (an attempt's
                // is about 830 bytes, its stages boxed inside it); a box moves as a pointer.
                tokio::spawn(Box::pin(async move {
                    let execution = worker.attempt(claimed).await;
                    worker.kick_when_due(&execution);
                }));
            }
            // A slot freed while this pass ran: the next pass starts at once, without arming a
            // timer for a wait that would end before it began.
            if futures::FutureExt::now_or_never(shared.kick.notified()).is_some() {
                idle_wait = shared.poll_interval;
                continue;
            }
            let wake = shared.jobs.local_wake().notified();
            tokio::select! {
                biased;
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
        due_timer.abort();
        if let Some(sweeper) = sweeper {
            sweeper.abort();
        }
        // A write still under way lands before the row is deleted, not after it.
        if let Some(beat) = beating {
            let _ = beat.await;
        }
        presence::forget(shared).await;
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

    /// Forwards the driver's push wake: a served queue kicks a pass, a served queue's due time
    /// goes to the due timer; `Live`/`Lost` flip the idle ceiling, and each `Live` (the first
    /// proof, and each one after a reconnect) reads the queues' next due times again and kicks
    /// a claim pass (a job enqueued due now while the wake was lost was announced to no one).
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
                    WakeSignal::Due { queue, at } if shared.queues.contains(&queue) => {
                        shared.dues.add(at);
                    }
                    WakeSignal::Due { .. } => {}
                    WakeSignal::Live => {
                        wake_live.store(true, Ordering::Relaxed);
                        // The session is (again) listening: what was announced while it was
                        // not (before its first proof, or while it was lost) is read back, the
                        // due times by the due timer, the jobs due now by one claim pass.
                        due::read_from_store(&shared);
                        shared.woken.notify_one();
                    }
                    WakeSignal::Lost => wake_live.store(false, Ordering::Relaxed),
                }
            }
        }))
    }

    /// A retry or a park of this worker's own comes due on its due timer (the driver's wake
    /// may announce it too: the set keeps one of each time).
    fn kick_when_due(&self, execution: &JobExecution) {
        if let Some(at) = execution.resume_at {
            self.shared.dues.add(at);
        }
    }

    /// One claim (stage 1); the rows it buried are told to their `on_settled` hooks.
    async fn claim(&self) -> Result<Vec<Claimed>, JobError> {
        let claims = claim::claim(&self.shared).await?;
        hook::bury(&self.shared, claims.buried).await;
        Ok(claims.claimed)
    }

    /// One attempt of one claimed job: admit -> execute -> settle, inside the run's span.
    async fn attempt(&self, mut claimed: Claimed) -> JobExecution {
        let shared = &*self.shared;
        let queue = claimed.job.queue.clone();
        let id = claimed.job.id;
        shared.presence.begin(id);
        let traceparent = claimed.job.traceparent.take();
        let trace = crate::telemetry::RunTrace::start(&claimed.job, traceparent);
        let pipeline = async {
            let ending = match admit::admit(shared, claimed).await {
                Admission::Admitted(admitted) => {
                    Ending::Executed(execute::execute(&self.shared, admitted).await)
                }
                Admission::Refused(refused) => Ending::Refused(refused),
            };
            settle::settle(shared, ending).await
        };
        // Boxed once here: the stages' futures are kilobytes, and the span's wrappers would
        // otherwise carry them by value twice over (an attempt's future was about 10 KB).
        let execution = trace.scope(Box::pin(pipeline)).await;
        // A shutdown waits for this: the execution, settle included, is over.
        count_in_flight(shared, |total| *total = total.saturating_sub(1));
        shared.presence.end(id);
        shared.stats.record(execution.outcome);
        shared.jobs.metrics().record_execution(&queue, &execution);
        execution
    }
}

/// Changes the in-flight total. Only a shutdown watches it, so with no one subscribed the change
/// notifies no one: a watch's send wakes every shard of its notifier, twice per job. A receiver
/// subscribed later reads the current value before it waits, so it misses nothing.
fn count_in_flight(shared: &WorkerShared, change: impl FnOnce(&mut usize)) {
    let total = &shared.in_flight_total;
    total.send_if_modified(|n| {
        change(n);
        total.receiver_count() > 0
    });
}

/// A running worker loop.
#[derive(Debug)]
pub struct WorkerHandle {
    worker: Worker,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    relay: Option<crate::outbox::RelayHandle>,
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
        if let Some(relay) = self.relay {
            relay.stop(shared.shutdown_deadline).await;
        }
        let mut in_flight = shared.in_flight_total.subscribe();
        let clock = shared.jobs.clock().clone();
        let finished = tokio::select! {
            biased;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns.
    fn future_size<A, B, F, Fut>(_: F) -> usize
    where
        F: FnOnce(A, B) -> Fut,
    {
        std::mem::size_of::<Fut>()
    }

    /// Every claimed job is a task holding this future, and a task moves its future several
    /// times while it spawns: it once grew to about 10 KB, a fifth of a short job's cost.
    #[test]
    fn an_attempt_s_future_stays_small() {
        let size = future_size(Worker::attempt);
        assert!(size <= 2048, "Worker::attempt's future is {size} bytes");
    }
}
