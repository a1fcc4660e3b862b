//! The scheduler: fires each task's cron occurrences through the one enqueue path, with one
//! leader per fleet.
//!
//! Every `tick_interval` (1 s) on the injected clock, one round: the leader checks its lease
//! (from memory between renewals), and fires every task whose next occurrence is due. While it
//! leads, watermarks and next occurrences live in memory, so an idle round reads no store and
//! resolves no cron: an idle leader costs 6 lease renewals a minute, whatever the number of
//! tasks. The pause table is read only when a task is due; a paused task is looked at again
//! after [`PAUSE_RECHECK`] and keeps its watermark, so on resume its catch-up decides.
//!
//! An occurrence fires atomically with its watermark ([`SchedulerStore::task_fire`]), and its
//! jobs carry occurrence-scoped idempotency keys, so neither a crash nor a handover fires twice.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), jobs::JobError> {
//! let jobs = jobs::Jobs::memory();
//! let scheduler = jobs.scheduler().registry(jobs::Registry::new()).build()?;
//! let round = scheduler.tick().await?;
//! assert!(round.leading);
//! # Ok(()) }
//! ```

mod builder;
mod catch_up;
mod cron;
mod fire;
mod leader;
mod schedule;
mod tasks;

pub use builder::SchedulerBuilder;
pub use leader::{DEFAULT_LEADER_TTL, LEASE_RENEWALS_PER_TTL};
#[cfg_attr(not(feature = "dashboard"), allow(unused_imports))]
pub(crate) use schedule::fire_entry_now;
pub(crate) use schedule::next_after;
#[cfg_attr(not(feature = "cli"), allow(unused_imports))]
pub(crate) use schedule::next_fires;
pub use schedule::{check_schedule, fire_now, next_run};
pub use tasks::Tasks;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use self::cron::Cron;
use self::fire::Keys;
use self::leader::{Change, Leader};
use crate::client::Jobs;
use crate::clock::{add, Timestamp};
use crate::driver::scheduler_store::{
    SchedulerResignParams, SchedulerStore, TaskFireParams, TaskPausedParams, TaskWatermarksParams,
};
use crate::error::{ErrorCode, JobError};
use crate::maintenance::CounterRollup;
use crate::task::{Occurrence, TaskEntry};

/// The wait between rounds.
pub const DEFAULT_TICK_INTERVAL: Duration = Duration::from_secs(1);
/// How long a shutdown waits for the round in flight before it abandons it.
pub const DEFAULT_SHUTDOWN_DEADLINE: Duration = Duration::from_secs(25);
/// A task found paused is looked at again after this long (the resume's latency).
pub const PAUSE_RECHECK: Duration = Duration::from_secs(5);
/// Fires the tasks' occurrences while it leads. Drive it by hand with [`Scheduler::tick`] (one
/// round), or run it with [`Scheduler::start`] and stop it with [`SchedulerHandle::shutdown`].
#[derive(Clone)]
pub struct Scheduler {
    shared: Arc<Shared>,
}

struct Shared {
    jobs: Jobs,
    id: String,
    tick_interval: Duration,
    shutdown_deadline: Duration,
    tasks: Vec<Slot>,
    /// One round at a time: another `tick()` waits for the round in flight.
    round: tokio::sync::Mutex<RoundState>,
    rounds: AtomicU64,
    fires: AtomicU64,
    store_calls: AtomicU64,
}

struct Slot {
    entry: TaskEntry,
    cron: Cron,
}

struct RoundState {
    leader: Leader,
    /// Per task, while leading; `None`: to be read from the store.
    marks: Option<Vec<Mark>>,
    /// The operator counters' roll-up, while leading.
    rollup: CounterRollup,
}

#[derive(Debug, Clone, Copy)]
struct Mark {
    watermark: Timestamp,
    next: Option<Timestamp>,
    paused_until: Option<Timestamp>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("id", &self.shared.id)
            .field("tasks", &self.shared.tasks.len())
            .finish()
    }
}

/// What one round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round {
    /// Whether this scheduler led during the round.
    pub leading: bool,
    /// The occurrences it fired: `(task, occurrence)`, in order.
    pub fired: Vec<(String, Timestamp)>,
}

/// What a scheduler has done since it was built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedulerStats {
    /// Rounds run.
    pub rounds: u64,
    /// Occurrences fired.
    pub fires: u64,
    /// Calls to the scheduler store (statements, on Postgres): an idle leader's cost.
    pub store_calls: u64,
    /// Cron candidates evaluated, over every task.
    pub cron_evaluations: u64,
}

impl Scheduler {
    /// Its id (the holder written on the lease row).
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// Counters since it was built.
    pub fn stats(&self) -> SchedulerStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        SchedulerStats {
            rounds: get(&self.shared.rounds),
            fires: get(&self.shared.fires),
            store_calls: get(&self.shared.store_calls),
            cron_evaluations: self.shared.tasks.iter().map(|t| t.cron.evaluations()).sum(),
        }
    }

    fn store(&self) -> &dyn SchedulerStore {
        self.shared
            .jobs
            .driver()
            .scheduler_store()
            .expect("checked when the scheduler was built")
    }

    fn call(&self) {
        self.shared.store_calls.fetch_add(1, Ordering::Relaxed);
    }

    /// One round: leads (or stands by), then fires every due occurrence.
    pub async fn tick(&self) -> Result<Round, JobError> {
        let mut state = self.shared.round.lock().await;
        self.shared.rounds.fetch_add(1, Ordering::Relaxed);
        let now = self.shared.jobs.now();
        let mut round = Round::default();
        if !self.still_leading(&mut state, now).await {
            return Ok(round);
        }
        round.leading = true;
        state.rollup.when_due(&self.shared.jobs, now).await;
        if state.marks.is_none() {
            state.marks = Some(self.load(now).await?);
        }
        for index in 0..self.shared.tasks.len() {
            let due = state
                .marks
                .as_ref()
                .and_then(|m| m[index].next)
                .is_some_and(|n| n <= now);
            if !due {
                continue;
            }
            // Asked before every task, answered from memory between renewals.
            if !self.still_leading(&mut state, now).await {
                round.leading = false;
                break;
            }
            let Some(marks) = state.marks.as_mut() else {
                break;
            };
            self.run_task(index, &mut marks[index], now, &mut round)
                .await?;
        }
        Ok(round)
    }

    async fn still_leading(&self, state: &mut RoundState, now: Timestamp) -> bool {
        if !state.leader.must_ask(now) {
            return state.leader.leading;
        }
        self.call();
        match state.leader.ask(self.store(), now).await {
            // Another leader may have moved the watermarks meanwhile: read them again.
            Change::Promoted | Change::Lost => state.marks = None,
            Change::None => {}
        }
        state.leader.leading
    }

    /// Reads the watermarks; arms the tasks that have none at `now` (a new task does not fire
    /// the occurrences before it existed).
    async fn load(&self, now: Timestamp) -> Result<Vec<Mark>, JobError> {
        let store = self.store();
        self.call();
        let stored = store.task_watermarks(&TaskWatermarksParams { now }).await?;
        let mut marks = Vec::with_capacity(self.shared.tasks.len());
        for slot in &self.shared.tasks {
            let name = slot.entry.descriptor().name;
            let watermark = match stored.iter().find(|w| w.task == name) {
                Some(w) => w.watermark,
                None => {
                    self.call();
                    let armed = store
                        .task_fire(&TaskFireParams {
                            task: name.to_string(),
                            expected: None,
                            watermark: now,
                            occurrence: None,
                            jobs: Vec::new(),
                            now,
                        })
                        .await?;
                    if armed.fired {
                        now
                    } else {
                        self.read_watermark(name, now).await?.unwrap_or(now)
                    }
                }
            };
            marks.push(Mark {
                watermark,
                next: slot.cron.next_after(watermark),
                paused_until: None,
            });
        }
        Ok(marks)
    }

    async fn read_watermark(
        &self,
        task: &str,
        now: Timestamp,
    ) -> Result<Option<Timestamp>, JobError> {
        self.call();
        Ok(self
            .store()
            .task_watermarks(&TaskWatermarksParams { now })
            .await?
            .into_iter()
            .find(|w| w.task == task)
            .map(|w| w.watermark))
    }

    async fn run_task(
        &self,
        index: usize,
        mark: &mut Mark,
        now: Timestamp,
        round: &mut Round,
    ) -> Result<(), JobError> {
        let slot = &self.shared.tasks[index];
        let d = slot.entry.descriptor();
        if mark.paused_until.is_some_and(|until| now < until) {
            return Ok(());
        }
        self.call();
        let paused = self
            .store()
            .task_paused(&TaskPausedParams {
                task: Some(d.name.to_string()),
                now,
            })
            .await?;
        if !paused.is_empty() {
            mark.paused_until = Some(add(now, PAUSE_RECHECK));
            return Ok(());
        }
        mark.paused_until = None;
        let Some(first) = mark.next else {
            return Ok(());
        };
        let plan = catch_up::plan(&slot.cron, d.catch_up, d.max_catch_up, first, now);
        for (occurrence, watermark) in plan.fires {
            let jobs = match fire::requests(
                &slot.entry,
                &Occurrence::new(occurrence, slot.cron.tz()),
                Keys::Occurrence,
                now,
            ) {
                Ok(jobs) => Some(jobs),
                Err(error) => {
                    // A bug in the task's entries: pass the occurrence rather than retry it
                    // every round.
                    tracing::error!(
                        target: "jobs.scheduler.fire-refused",
                        task = d.name,
                        occurrence = %occurrence,
                        code = error.code().map(|c| c.as_str()),
                        "the task's entries were refused; passing this occurrence"
                    );
                    None
                }
            };
            self.call();
            let fired = self
                .store()
                .task_fire(&TaskFireParams {
                    task: d.name.to_string(),
                    expected: Some(mark.watermark),
                    watermark,
                    occurrence: jobs.as_ref().map(|_| occurrence),
                    jobs: jobs.clone().unwrap_or_default(),
                    now,
                })
                .await?;
            if !fired.fired {
                // Another scheduler moved it: take its watermark and stop here this round.
                tracing::warn!(
                    target: "jobs.scheduler.fire-fenced",
                    task = d.name,
                    "the watermark moved under this scheduler; reading it again"
                );
                if let Some(w) = self.read_watermark(d.name, now).await? {
                    mark.watermark = w;
                }
                break;
            }
            mark.watermark = watermark;
            if jobs.is_some() {
                self.shared.fires.fetch_add(1, Ordering::Relaxed);
                round.fired.push((d.name.to_string(), occurrence));
                if fired.jobs.iter().any(|j| !j.deduped) {
                    self.shared.jobs.local_wake().notify_waiters();
                }
            }
        }
        mark.next = slot.cron.next_after(mark.watermark);
        Ok(())
    }

    /// Starts the scheduler loop on the tokio runtime: one round every tick interval.
    pub fn start(&self) -> SchedulerHandle {
        let stop = CancellationToken::new();
        let task = tokio::spawn(self.clone().run_loop(stop.clone()));
        SchedulerHandle {
            scheduler: self.clone(),
            stop,
            task,
        }
    }

    async fn run_loop(self, stop: CancellationToken) {
        let clock = self.shared.jobs.clock().clone();
        tracing::info!(target: "jobs.scheduler.started", id = %self.shared.id, tasks = self.shared.tasks.len());
        loop {
            // A stop never cuts a round: it is only heard between rounds.
            if let Err(error) = self.tick().await {
                tracing::warn!(
                    target: "jobs.scheduler.round-failed",
                    id = %self.shared.id,
                    code = error.code().map(|c| c.as_str()),
                    "a scheduler round failed; trying again next round"
                );
                // Whatever it held in memory may be stale now.
                self.shared.round.lock().await.marks = None;
            }
            tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                _ = clock.sleep(self.shared.tick_interval) => {}
            }
        }
    }

    /// Gives the lease up if this scheduler holds it, so a standby promotes on its next ask.
    async fn resign(&self) -> Result<(), JobError> {
        let mut state = self.shared.round.lock().await;
        if !state.leader.leading {
            return Ok(());
        }
        state.leader.leading = false;
        state.marks = None;
        self.call();
        self.store()
            .scheduler_resign(&SchedulerResignParams {
                holder: self.shared.id.clone(),
                now: self.shared.jobs.now(),
            })
            .await
    }
}

/// A running scheduler loop.
#[derive(Debug)]
pub struct SchedulerHandle {
    scheduler: Scheduler,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl SchedulerHandle {
    /// The scheduler.
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// Stops after the round in flight, then deletes the lease row so a standby promotes at once.
    ///
    /// The round is waited for at most the scheduler's shutdown deadline (25 s by default,
    /// [`SchedulerBuilder::shutdown_deadline`], on its clock). A round still running then (a
    /// store that stopped answering) is abandoned: logged `jobs.scheduler.drain-abandoned`,
    /// the lease kept (a standby taking it while the round may still fire would fire twice; it
    /// lapses after its TTL), and the shutdown answers `X_TIMEOUT`.
    pub async fn shutdown(self) -> Result<(), JobError> {
        let SchedulerHandle {
            scheduler,
            stop,
            mut task,
        } = self;
        stop.cancel();
        let deadline = scheduler.shared.shutdown_deadline;
        let clock = scheduler.shared.jobs.clock().clone();
        let finished = tokio::select! {
            biased;
            _ = &mut task => true,
            _ = clock.sleep(deadline) => false,
        };
        if !finished {
            task.abort();
            tracing::warn!(
                target: "jobs.scheduler.drain-abandoned",
                id = %scheduler.shared.id,
                deadline_ms = deadline.as_millis() as u64,
                "the round in flight outlasted the shutdown deadline; abandoned, the lease kept"
            );
            return Err(JobError::new(
                ErrorCode::Timeout,
                format!(
                    "scheduler {}: the round in flight outlasted the shutdown deadline of {}; it was abandoned and the leader lease kept until it lapses",
                    scheduler.shared.id,
                    crate::duration::shown(deadline)
                ),
            )
            .with_fix("find what the scheduler store stopped answering (the database's locks and load), or raise `SchedulerBuilder::shutdown_deadline`"));
        }
        scheduler.resign().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::TestClock;
    use crate::driver::MemoryDriver;
    use crate::registry::Registry;

    /// A round that never ends (here: the round's lock held, as a store call that never
    /// answers holds it) does not hold the shutdown past its deadline, and the lease is kept.
    #[tokio::test(flavor = "current_thread")]
    async fn a_hung_round_is_abandoned_at_the_shutdown_deadline() {
        let clock = Arc::new(TestClock::new());
        let jobs = Jobs::with_clock(Arc::new(MemoryDriver::new()), clock.clone());
        let scheduler = jobs
            .scheduler()
            .registry(Registry::new())
            .id("hung")
            .shutdown_deadline(Duration::from_secs(5))
            .build()
            .unwrap();
        // The first round leads, so the lease is this scheduler's.
        assert!(scheduler.tick().await.unwrap().leading);
        // The next round hangs: the loop waits on the round in flight.
        let in_flight = scheduler.shared.round.lock().await;
        let handle = scheduler.start();
        let shutdown = tokio::spawn(handle.shutdown());
        let mut spins = 0;
        while clock.pending_timers() == 0 {
            spins += 1;
            assert!(spins < 10_000, "the shutdown never armed its deadline");
            tokio::task::yield_now().await;
        }
        assert!(!shutdown.is_finished());
        clock.advance(Duration::from_secs(5));
        let answer = shutdown.await.unwrap();
        let error = answer.expect_err("an abandoned round is reported");
        assert!(error.is(ErrorCode::Timeout), "{error}");
        assert!(error.message().contains("abandoned"), "{error}");
        drop(in_flight);
        // The lease was kept: the scheduler still leads, and no other scheduler promotes.
        assert!(scheduler.shared.round.lock().await.leader.leading);
        let standby = jobs
            .scheduler()
            .registry(Registry::new())
            .id("standby")
            .build()
            .unwrap();
        assert!(!standby.tick().await.unwrap().leading);
    }

    /// A round that ends in time lets the shutdown resign: a standby promotes at once.
    #[tokio::test(flavor = "current_thread")]
    async fn a_shutdown_in_time_gives_the_lease_up() {
        let clock = Arc::new(TestClock::new());
        let jobs = Jobs::with_clock(Arc::new(MemoryDriver::new()), clock.clone());
        let scheduler = jobs
            .scheduler()
            .registry(Registry::new())
            .id("prompt")
            .build()
            .unwrap();
        let handle = scheduler.start();
        handle.shutdown().await.unwrap();
        let standby = jobs
            .scheduler()
            .registry(Registry::new())
            .id("standby")
            .build()
            .unwrap();
        assert!(standby.tick().await.unwrap().leading);
    }
}
