//! [`SchedulerBuilder`]: a scheduler's settings, and the checks of every task's declaration
//! that `build` runs before a scheduler exists.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use crate::client::Jobs;
use crate::error::{ErrorCode, JobError};
use crate::maintenance::CounterRollup;
use crate::registry::Registry;
use crate::task::TaskEntry;

use super::cron::Cron;
use super::leader::{Leader, DEFAULT_LEADER_TTL};
use super::{
    RoundState, Scheduler, Shared, Slot, DEFAULT_SHUTDOWN_DEADLINE, DEFAULT_TICK_INTERVAL,
};

/// Checks a task's declaration at run time (the macro checks literals at compile time; this is
/// for values from configuration): its cron, its zone, and `max_catch_up` > 0.
fn compile(entry: &TaskEntry) -> Result<Cron, JobError> {
    let d = entry.descriptor();
    if d.max_catch_up == 0 {
        return Err(JobError::new(
            ErrorCode::Invariant,
            format!("task `{}` declares `max_catch_up = 0`", d.name),
        )
        .with_fix("bound run-all catch-up with at least 1 (the default is 10)"));
    }
    Cron::parse(d.name, d.cron, d.tz)
}

/// Configures a [`Scheduler`]. Build one with [`Jobs::scheduler`].
#[derive(Debug)]
pub struct SchedulerBuilder {
    jobs: Jobs,
    registry: Option<Registry>,
    id: Option<String>,
    lease_ttl: Duration,
    tick_interval: Duration,
    shutdown_deadline: Duration,
}

impl SchedulerBuilder {
    pub(crate) fn new(jobs: Jobs) -> Self {
        SchedulerBuilder {
            jobs,
            registry: None,
            id: None,
            lease_ttl: DEFAULT_LEADER_TTL,
            tick_interval: DEFAULT_TICK_INTERVAL,
            shutdown_deadline: DEFAULT_SHUTDOWN_DEADLINE,
        }
    }

    /// The tasks it fires (default: every `#[task]` linked into the binary).
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// This scheduler's id: its name on the lease row (default a fresh uuid).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// How long the leader lease holds without a renewal (default 30 s; renewed every third).
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// The wait between rounds (default 1 s).
    pub fn tick_interval(mut self, interval: Duration) -> Self {
        self.tick_interval = interval;
        self
    }

    /// How long a shutdown waits for the round in flight (default 25 s, on the scheduler's
    /// clock). A round still running then is abandoned and the lease kept, so no standby
    /// fires what the round may yet fire; the lease lapses after its TTL.
    pub fn shutdown_deadline(mut self, deadline: Duration) -> Self {
        self.shutdown_deadline = deadline;
        self
    }

    /// Checks every task and builds the scheduler. `X_NOT_IMPLEMENTED` when the driver has no
    /// scheduler store; `X_INVARIANT` for a refused cron, zone or `max_catch_up`.
    pub fn build(self) -> Result<Scheduler, JobError> {
        self.jobs
            .driver_part(|d| d.scheduler_store(), "has no scheduler store")?;
        if self.lease_ttl < Duration::from_millis(3) || self.tick_interval.is_zero() {
            return Err(JobError::new(
                ErrorCode::Invariant,
                "the scheduler's lease TTL and tick interval must be positive",
            ));
        }
        let registry = match self.registry {
            Some(registry) => registry,
            None => Registry::global()?.clone(),
        };
        let tasks = registry
            .tasks()
            .map(|entry| {
                Ok(Slot {
                    entry: *entry,
                    cron: compile(entry)?,
                })
            })
            .collect::<Result<Vec<_>, JobError>>()?;
        let id = self
            .id
            .unwrap_or_else(|| crate::entropy::new_id().to_string());
        Ok(Scheduler {
            shared: Arc::new(Shared {
                jobs: self.jobs,
                tick_interval: self.tick_interval,
                shutdown_deadline: self.shutdown_deadline,
                round: tokio::sync::Mutex::new(RoundState {
                    leader: Leader::new(id.clone(), self.lease_ttl),
                    marks: None,
                    rollup: CounterRollup::default(),
                }),
                id,
                tasks,
                rounds: AtomicU64::new(0),
                fires: AtomicU64::new(0),
                store_calls: AtomicU64::new(0),
            }),
        })
    }
}
