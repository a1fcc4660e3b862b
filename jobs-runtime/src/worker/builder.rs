//! [`WorkerBuilder`]: a worker's queues, slots and timings, checked before it starts.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use super::{Limits, QueueLimits, Worker, WorkerCounters, WorkerShared};
use crate::client::Jobs;
use crate::descriptor::DEFAULT_QUEUE;
use crate::error::{ErrorCode, JobError};
use crate::registry::Registry;
use crate::run::StepObserver;

/// Slots per queue when none are configured.
pub const DEFAULT_CONCURRENCY: u32 = 8;
/// How long a claim stays invisible without a heartbeat.
pub const DEFAULT_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(30);
/// The wait between passes while there is work.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(250);
/// The ceiling of the idle wait.
pub const DEFAULT_IDLE_POLL_MAX: Duration = Duration::from_secs(2);
/// The most the fleet's clocks are taken to disagree by, unless told (and never more than a
/// tenth of the visibility timeout).
pub const DEFAULT_CLOCK_SKEW: Duration = Duration::from_secs(1);
/// How long a shutdown lets running jobs finish.
pub const DEFAULT_SHUTDOWN_DEADLINE: Duration = Duration::from_secs(25);

/// Configures a [`Worker`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use std::time::Duration;
/// let jobs = jobs::Jobs::memory();
/// let worker = jobs
///     .worker()
///     .queues(["default", "email"])
///     .concurrency(8)
///     .queue_concurrency("email", 2)
///     .visibility_timeout(Duration::from_secs(60))
///     .build()
///     .unwrap();
/// assert_eq!(worker.queues(), ["default", "email"]);
/// # }
/// ```
pub struct WorkerBuilder {
    jobs: Jobs,
    registry: Option<Registry>,
    queues: Option<Vec<String>>,
    concurrency: u32,
    queue_concurrency: BTreeMap<String, u32>,
    visibility_timeout: Duration,
    heartbeat_interval: Option<Duration>,
    clock_skew: Option<Duration>,
    poll_interval: Duration,
    idle_poll_max: Duration,
    idle_poll_max_declared: bool,
    shutdown_deadline: Duration,
    context: Option<Arc<dyn Any + Send + Sync>>,
    observer: Option<Arc<dyn StepObserver>>,
    id: Option<String>,
    limits: Limits,
    queue_limits: BTreeMap<String, QueueLimits>,
    retention: Option<crate::Retention>,
    outbox_relay: Option<crate::outbox::OutboxRelay>,
}

impl std::fmt::Debug for WorkerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerBuilder")
            .field("queues", &self.queues)
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

impl Jobs {
    /// A worker over this client's driver and clock.
    pub fn worker(&self) -> WorkerBuilder {
        WorkerBuilder::new(self.clone())
    }
}

impl WorkerBuilder {
    pub(crate) fn new(jobs: Jobs) -> Self {
        WorkerBuilder {
            jobs,
            registry: None,
            queues: None,
            concurrency: DEFAULT_CONCURRENCY,
            queue_concurrency: BTreeMap::new(),
            visibility_timeout: DEFAULT_VISIBILITY_TIMEOUT,
            heartbeat_interval: None,
            clock_skew: None,
            poll_interval: DEFAULT_POLL_INTERVAL,
            idle_poll_max: DEFAULT_IDLE_POLL_MAX,
            idle_poll_max_declared: false,
            shutdown_deadline: DEFAULT_SHUTDOWN_DEADLINE,
            context: None,
            observer: None,
            id: None,
            limits: Limits::default(),
            queue_limits: BTreeMap::new(),
            retention: None,
            outbox_relay: None,
        }
    }

    /// The jobs this worker can run (default: every `#[job]` linked into the binary).
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// The queues to claim from (default: every queue a registered job names, and `default`).
    pub fn queues<I, S>(mut self, queues: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.queues = Some(queues.into_iter().map(Into::into).collect());
        self
    }

    /// Slots per queue (default 8).
    pub fn concurrency(mut self, slots: u32) -> Self {
        self.concurrency = slots;
        self
    }

    /// Slots for one queue, overriding [`WorkerBuilder::concurrency`].
    pub fn queue_concurrency(mut self, queue: impl Into<String>, slots: u32) -> Self {
        self.queue_concurrency.insert(queue.into(), slots);
        self
    }

    /// How long a claim holds without a heartbeat (default 30 s).
    pub fn visibility_timeout(mut self, timeout: Duration) -> Self {
        self.visibility_timeout = timeout;
        self
    }

    /// How often a running job's claim is renewed (default a third of the visibility timeout).
    pub fn heartbeat_interval(mut self, interval: Duration) -> Self {
        self.heartbeat_interval = Some(interval);
        self
    }

    /// How far apart the fleet's clocks may be (default 1 s, or a tenth of the visibility
    /// timeout when that is less). A claim lapses by the clock of the worker that takes the row
    /// next, which may run ahead of this one's: so an attempt starts no further step once its
    /// claim is within this much of lapsing by its own clock. Found by the deterministic
    /// simulator (`jobs-sim`): a worker whose clock ran ahead took a row over while its holder,
    /// answered late, still trusted the last moments of its window and ran a step the taker had
    /// already completed.
    pub fn clock_skew(mut self, skew: Duration) -> Self {
        self.clock_skew = Some(skew);
        self
    }

    /// The wait between passes while there is work (default 250 ms).
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// The ceiling of the idle wait (default 2 s, raised to 5 s while a push wake is proven;
    /// a declared value is the ceiling either way).
    pub fn idle_poll_max(mut self, max: Duration) -> Self {
        self.idle_poll_max = max;
        self.idle_poll_max_declared = true;
        self
    }

    /// How long a shutdown lets running jobs finish (default 25 s).
    pub fn shutdown_deadline(mut self, deadline: Duration) -> Self {
        self.shutdown_deadline = deadline;
        self
    }

    /// App state a job reads with `run.context::<T>()`.
    pub fn context<T: Send + Sync + 'static>(mut self, context: Arc<T>) -> Self {
        self.context = Some(context);
        self
    }

    /// Told about every step closure that runs.
    pub fn observer(mut self, observer: Arc<dyn StepObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Per-process limits (global, per queue, per tenant, tenant start rate). Over a limit a
    /// claim is handed back without spending an attempt; zero is a hard stop.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Fleet-wide limits for one of the worker's queues: a cap on its runs in flight and a
    /// limit on its starts per window, held in the driver's lease store (slots `queue:<queue>`
    /// and `rate-queue:<queue>`), so they hold across every worker process. Over either, a
    /// claim is handed back without spending an attempt.
    ///
    /// Every worker serving the queue must be given the same values. `build` refuses a zero
    /// cap or limit, a window under 1 ms, a queue the worker does not claim from
    /// (`X_INVARIANT`), and limits on a driver with no lease store
    /// (`X_JOB_CONCURRENCY_UNENFORCEABLE`). Given twice for one queue, the last one holds.
    ///
    /// ```
    /// # fn main() -> Result<(), jobs::JobError> {
    /// use std::time::Duration;
    /// use jobs::QueueLimits;
    /// let jobs = jobs::Jobs::memory();
    /// let worker = jobs
    ///     .worker()
    ///     .queues(["default", "email"])
    ///     .queue_limits("email", QueueLimits::new().concurrency(10).rate(100, Duration::from_secs(60)))
    ///     .build()?;
    /// # drop(worker);
    /// # Ok(())
    /// # }
    /// ```
    pub fn queue_limits(mut self, queue: impl Into<String>, limits: QueueLimits) -> Self {
        self.queue_limits.insert(queue.into(), limits);
        self
    }

    /// Sweeps finished rows past their retention windows while the worker runs (every
    /// worker may sweep: the deletes skip rows another sweeper holds).
    pub fn retention(mut self, retention: crate::Retention) -> Self {
        self.retention = Some(retention);
        self
    }

    /// Runs `relay` beside the worker: [`Worker::start`](crate::Worker::start) starts it, and
    /// [`WorkerHandle::shutdown`](crate::WorkerHandle::shutdown) stops it, joining its pass in
    /// flight within the worker's shutdown deadline.
    pub fn outbox_relay(mut self, relay: crate::outbox::OutboxRelay) -> Self {
        self.outbox_relay = Some(relay);
        self
    }

    /// This worker's id (default a fresh uuid).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Checks the configuration and builds the worker.
    pub fn build(self) -> Result<Worker, JobError> {
        let registry = match self.registry {
            Some(registry) => registry,
            None => Registry::global()?.clone(),
        };
        if self.jobs.driver().lease_store().is_none() {
            refuse_unenforceable_concurrency(&registry, &self.queue_limits)?;
        }
        self.limits.check()?;
        for (what, value) in [
            ("visibility_timeout", self.visibility_timeout),
            ("poll_interval", self.poll_interval),
            ("idle_poll_max", self.idle_poll_max),
        ] {
            if value.is_zero() {
                return Err(JobError::new(
                    ErrorCode::Invariant,
                    format!("the worker's `{what}` is zero"),
                )
                .with_fix("give it a positive duration"));
            }
        }
        let heartbeat_interval = self
            .heartbeat_interval
            .unwrap_or(self.visibility_timeout / 3);
        if heartbeat_interval.is_zero() || heartbeat_interval >= self.visibility_timeout {
            return Err(JobError::new(
                ErrorCode::Invariant,
                "the worker's heartbeat interval must be positive and shorter than its visibility timeout",
            ));
        }
        let clock_skew = self
            .clock_skew
            .unwrap_or(DEFAULT_CLOCK_SKEW.min(self.visibility_timeout / 10));
        if heartbeat_interval + clock_skew >= self.visibility_timeout {
            return Err(JobError::new(
                ErrorCode::Invariant,
                "the worker's heartbeat interval and clock skew together must be shorter than its visibility timeout",
            )
            .with_fix("raise visibility_timeout, or lower heartbeat_interval or clock_skew"));
        }
        let queues = match self.queues {
            Some(queues) => {
                // The grammar an enqueue's queue is held to: a worker on a queue no enqueue
                // can name would claim nothing, silently.
                for queue in &queues {
                    crate::limits::check_name(crate::limits::QUEUE, "a worker", queue)?;
                }
                queues
            }
            None => {
                let mut queues: Vec<String> = registry
                    .entries()
                    .map(|e| e.descriptor().queue.to_string())
                    .collect();
                queues.push(DEFAULT_QUEUE.to_string());
                queues
            }
        };
        let mut queues = queues;
        queues.sort();
        queues.dedup();
        if queues.is_empty() {
            return Err(JobError::new(
                ErrorCode::JobClaimQueuesEmpty,
                "the worker was given no queue",
            ));
        }
        for (queue, limits) in &self.queue_limits {
            crate::limits::check_name(crate::limits::QUEUE, "a worker", queue)?;
            limits.check(queue)?;
            if !queues.contains(queue) {
                return Err(JobError::new(
                    ErrorCode::Invariant,
                    format!("the worker was given limits for queue `{queue}`, which it does not claim from"),
                )
                .with_fix("give `queue_limits` only for a queue the worker claims from (`queues`)"));
            }
        }
        let slots = queues
            .iter()
            .map(|q| {
                let n = self
                    .queue_concurrency
                    .get(q)
                    .copied()
                    .unwrap_or(self.concurrency);
                (q.clone(), n)
            })
            .collect();
        let (in_flight_total, _) = watch::channel(0);
        Ok(Worker {
            shared: Arc::new(WorkerShared {
                environment: self.jobs.environment(),
                jobs: self.jobs,
                registry,
                id: self
                    .id
                    .unwrap_or_else(|| crate::entropy::new_id().to_string())
                    .into(),
                queues,
                slots,
                visibility_timeout: self.visibility_timeout,
                claim_window: self.visibility_timeout - clock_skew,
                heartbeat_interval,
                poll_interval: self.poll_interval,
                idle_poll_max: self.idle_poll_max,
                idle_poll_max_declared: self.idle_poll_max_declared,
                shutdown_deadline: self.shutdown_deadline,
                context: self.context,
                observer: self.observer,
                in_flight: Mutex::new(BTreeMap::new()),
                fair_cursor: Mutex::new(String::new()),
                in_flight_total,
                drain: CancellationToken::new(),
                kick: Notify::new(),
                woken: Notify::new(),
                dues: Default::default(),
                stats: WorkerCounters::default(),
                limits: self.limits,
                queue_limits: self.queue_limits,
                limiter: Default::default(),
                presence: Default::default(),
                completer: Default::default(),
                keeper: Default::default(),
                retention: self.retention,
                outbox_relay: self.outbox_relay,
            }),
        })
    }
}

/// A job declaring `concurrency` or `rate`, or a queue given fleet-wide limits, needs a lease
/// store to hold its slots: on a driver without one, the worker refuses to start rather than
/// run the job uncapped.
fn refuse_unenforceable_concurrency(
    registry: &Registry,
    queue_limits: &BTreeMap<String, QueueLimits>,
) -> Result<(), JobError> {
    if let Some(queue) = queue_limits.keys().next() {
        return Err(JobError::new(
            ErrorCode::JobConcurrencyUnenforceable,
            format!(
                "the worker was given fleet-wide limits for queue `{queue}`, and this driver has no lease store to enforce them"
            ),
        )
        .with_fix("use a driver with a lease store (every built-in one has it), or leave `queue_limits` out"));
    }
    let capped: Vec<&str> = registry
        .entries()
        .filter(|e| e.descriptor().concurrency.is_some() || e.descriptor().rate.is_some())
        .map(|e| e.descriptor().name)
        .collect();
    if capped.is_empty() {
        return Ok(());
    }
    Err(JobError::new(
        ErrorCode::JobConcurrencyUnenforceable,
        format!(
            "jobs {} declare `concurrency` or `rate`, and this driver has no lease store to enforce it",
            capped.join(", ")
        ),
    )
    .with_fix("use a driver with a lease store (every built-in one has it)"))
}
