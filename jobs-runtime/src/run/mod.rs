//! [`Run`]: what a job body receives. Durable steps, sleeps, event waits, progress, the
//! cancellation signal and the app's context all hang off it. This file holds the `Run`, its
//! construction and its accessors; `steps.rs` the durable step and the step records, `waits.rs`
//! sleeps and event waits, `progress.rs` the progress reports.

use std::any::Any;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::clock::{SharedClock, Timestamp};
use crate::descriptor::JobDescriptor;
use crate::driver::{JobDriver, JobId, Progress, RunId, StepFence, StepListParams, StepRecord};
use crate::error::{ErrorCode, JobError};
use claim_window::ClaimWindow;

pub(crate) mod claim_window;
mod progress;
mod steps;
mod waits;

/// Step names kept per attempt for the operator's trace (oldest dropped).
pub const MAX_TRACE_NAMES: usize = 200;

/// Told about every step closure that actually ran (not replays). The test kit counts them.
pub trait StepObserver: Send + Sync + 'static {
    /// `name`'s closure ran in `run_id`.
    fn step_executed(&self, job_id: JobId, run_id: RunId, name: &str);
}

/// The context of one attempt of one run.
///
/// ```no_run
/// use jobs::prelude::*;
///
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// struct ChargeOrder { order_id: u64 }
///
/// #[job(key = "charge:{order_id}", tenant = none)]
/// async fn charge(run: Run, input: ChargeOrder) -> Result<String, JobError> {
///     let receipt: String = run
///         .step("charge-card", async { Ok::<_, JobError>(format!("rcpt-{}", input.order_id)) })
///         .await?;
///     run.sleep("1d").await?;
///     Ok(receipt)
/// }
/// ```
#[derive(Clone)]
pub struct Run {
    inner: Arc<RunInner>,
}

pub(crate) struct RunInner {
    seed: RunSeed,
    state: Mutex<RunState>,
}

#[derive(Default)]
struct RunState {
    /// The run's steps, read once per attempt.
    stored: HashMap<String, StepRecord>,
    /// Names used in this attempt: a second use is `X_STEP_DUPLICATE`.
    seen: HashSet<String>,
    /// How often each derived name (`sleep:1d`, `wait:paid`) was used, for `#2`, `#3`...
    derived: HashMap<String, u32>,
    /// Set by a sleep or a wait: the run parks until then.
    suspend_until: Option<Timestamp>,
    /// Set by an invoke that parks: the group of children it awaits.
    awaiting: Option<crate::driver::GroupId>,
    trace: VecDeque<String>,
    progress: Option<Progress>,
    progress_dirty: bool,
    progress_written_at: Option<Timestamp>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("job", &self.inner.seed.descriptor.name)
            .field("job_id", &self.inner.seed.job_id)
            .field("run_id", &self.inner.seed.run_id)
            .field("attempt", &self.inner.seed.attempt)
            .finish()
    }
}

pub(crate) struct RunSeed {
    pub job_id: JobId,
    pub run_id: RunId,
    pub attempt: u32,
    pub max_attempts: u32,
    pub tenant: Option<String>,
    pub descriptor: JobDescriptor,
    pub driver: Arc<dyn JobDriver>,
    pub clock: SharedClock,
    /// The worker's client's local wake: an invoke that enqueues children rings it, so this
    /// process' idle workers take them at once.
    pub local_wake: Arc<tokio::sync::Notify>,
    pub fence: StepFence,
    pub cancel: CancellationToken,
    /// The attempt's claim window: no step starts once it has passed.
    pub claim_window: Arc<ClaimWindow>,
    pub context: Option<Arc<dyn Any + Send + Sync>>,
    pub observer: Option<Arc<dyn StepObserver>>,
    /// The deployment environment of the worker's client (`Jobs::environment`).
    pub environment: Option<String>,
}

impl Run {
    /// Builds the run and loads its steps with one read.
    pub(crate) async fn load(seed: RunSeed) -> Result<Run, JobError> {
        let stored = seed
            .driver
            .step_list(&StepListParams {
                run_id: seed.run_id,
            })
            .await?
            .into_iter()
            .map(|r| (r.name.clone(), r))
            .collect();
        Ok(Run::with_steps(seed, stored))
    }

    /// A run with no step records yet (every first attempt): nothing to read.
    pub(crate) fn fresh(seed: RunSeed) -> Run {
        Run::with_steps(seed, HashMap::new())
    }

    fn with_steps(seed: RunSeed, stored: HashMap<String, StepRecord>) -> Run {
        Run {
            inner: Arc::new(RunInner {
                seed,
                state: Mutex::new(RunState {
                    stored,
                    ..RunState::default()
                }),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, RunState> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The job's id.
    pub fn job_id(&self) -> JobId {
        self.inner.seed.job_id
    }

    /// The run's id, stable across attempts; a good idempotency key for an external call
    /// together with the step name.
    pub fn run_id(&self) -> RunId {
        self.inner.seed.run_id
    }

    /// The job's declared name.
    pub fn job_name(&self) -> &'static str {
        self.inner.seed.descriptor.name
    }

    /// This attempt's number, from 1.
    pub fn attempt(&self) -> u32 {
        self.inner.seed.attempt
    }

    /// `true` when a failure of this attempt will not be retried for want of attempts.
    pub fn final_attempt(&self) -> bool {
        self.inner.seed.attempt >= self.inner.seed.max_attempts
    }

    /// The deployment environment of the worker that runs it (its client's
    /// `Jobs::in_environment`, or `JOBS_ENVIRONMENT`), if named.
    pub fn environment(&self) -> Option<&str> {
        self.inner.seed.environment.as_deref()
    }

    /// The run's tenant (`None` for `tenant = none`).
    pub fn tenant(&self) -> Option<&str> {
        self.inner.seed.tenant.as_deref()
    }

    /// Now, on the worker's clock.
    pub fn now(&self) -> Timestamp {
        self.inner.seed.clock.now()
    }

    /// The driver the run writes through (backfill and ledger factories reach their ports here).
    pub(crate) fn driver(&self) -> &std::sync::Arc<dyn JobDriver> {
        &self.inner.seed.driver
    }

    /// The attempt's cancellation (a backfill's pacer unwinds on it).
    pub(crate) fn cancel_token(&self) -> &CancellationToken {
        &self.inner.seed.cancel
    }

    /// How long a parked wait (or invoke) waits between polls (`event_poll`).
    pub(crate) fn event_poll(&self) -> std::time::Duration {
        self.inner.seed.descriptor.event_poll
    }

    /// The local wake of the worker's client (an invoke rings it after enqueueing children).
    pub(crate) fn local_wake(&self) -> &tokio::sync::Notify {
        &self.inner.seed.local_wake
    }

    /// The worker's clock (a backfill's pacer waits on it).
    pub(crate) fn clock(&self) -> &SharedClock {
        &self.inner.seed.clock
    }

    /// Whether the attempt was cancelled (timeout, lost lease, drain, operator cancel).
    pub fn is_cancelled(&self) -> bool {
        self.inner.seed.cancel.is_cancelled()
    }

    /// Resolves when the attempt is cancelled. Long work should `select!` on it.
    pub async fn cancelled(&self) {
        self.inner.seed.cancel.cancelled().await
    }

    /// The app context the worker was given with `WorkerBuilder::context`.
    pub fn context<T: Send + Sync + 'static>(&self) -> Result<Arc<T>, JobError> {
        self.inner
            .seed
            .context
            .clone()
            .and_then(|c| c.downcast::<T>().ok())
            .ok_or_else(|| {
                JobError::new(
                    ErrorCode::Invariant,
                    format!(
                        "job `{}` asked for a context of type `{}` the worker was not given",
                        self.inner.seed.descriptor.name,
                        std::any::type_name::<T>()
                    ),
                )
                .with_fix("pass it to the worker with `.context(Arc::new(value))`")
            })
    }

    /// The names of the steps this attempt touched, oldest first (at most [`MAX_TRACE_NAMES`]).
    pub fn trace(&self) -> Vec<String> {
        self.state().trace.iter().cloned().collect()
    }
}
