//! [`Run`]: what a job body receives. Durable steps, sleeps, event waits, progress, the
//! cancellation signal and the app's context all hang off it.

use std::any::Any;
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{de::DeserializeOwned, Serialize};
use tokio_util::sync::CancellationToken;

use crate::clock::{add, SharedClock, Timestamp};
use crate::descriptor::JobDescriptor;
use crate::driver::{
    EventFindParams, EventSince, JobDriver, JobId, Progress, ProgressParams, RunId, StepFence,
    StepListParams, StepPutParams, StepRecord, StepStatus, WaitSpec,
};
use crate::duration::IntoDuration;
use crate::error::{ErrorCode, JobError};
use claim_window::ClaimWindow;

pub(crate) mod claim_window;

/// Step names kept per attempt for the operator's trace (oldest dropped).
pub const MAX_TRACE_NAMES: usize = 200;

/// Progress is written at most once a second per run, and flushed before every settle.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

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
    pub fence: StepFence,
    pub cancel: CancellationToken,
    /// The attempt's claim window: no step starts once it has passed.
    pub claim_window: Arc<ClaimWindow>,
    pub context: Option<Arc<dyn Any + Send + Sync>>,
    pub observer: Option<Arc<dyn StepObserver>>,
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

    /// Runs `work` once, ever, for this run: its output is stored before `step` returns, and
    /// a later attempt gets the stored output back without running `work` again.
    ///
    /// Names must be unique within a run (`X_STEP_DUPLICATE`) and within
    /// [`MAX_STEP_NAME_BYTES`](crate::limits::MAX_STEP_NAME_BYTES) (`X_LIMIT_EXCEEDED`); an
    /// output must serialize and hold no NUL character (`X_STEP_OUTPUT_UNSERIALIZABLE`) and own
    /// its data: it is read back on a later attempt, so a step answers `String`, not `&str`
    /// (`#[job]` refuses a borrowed output it can see, such as `Ok("text")`; elsewhere rustc
    /// says "`Deserialize` is not general enough"). With `step_timeout` declared, `work` is dropped after
    /// it and the step fails with `X_JOB_TIMEOUT`.
    pub async fn step<T, E, F>(&self, name: &str, work: F) -> Result<T, JobError>
    where
        T: Serialize + DeserializeOwned,
        E: Into<JobError>,
        F: Future<Output = Result<T, E>>,
    {
        let previous = self.enter(name)?;
        if let Some(record) = &previous {
            if record.status == StepStatus::Completed {
                return decode_output(name, record.output.clone());
            }
        }
        self.refuse_if_cancelled()?;
        self.refuse_if_claim_lapsed(name)?;
        let attempts = previous.as_ref().map_or(0, |r| r.attempts) + 1;
        let work = crate::telemetry::step(self.job_name(), name, attempts, work);
        let result = match self.inner.seed.descriptor.step_timeout {
            Some(ceiling) => {
                tokio::select! {
                    r = work => r.map_err(Into::into),
                    _ = self.inner.seed.clock.sleep(ceiling) => Err(JobError::new(
                        ErrorCode::JobTimeout,
                        format!("step `{name}` outran its step_timeout of {}", humantime::format_duration(ceiling)),
                    )),
                }
            }
            None => work.await.map_err(Into::into),
        };
        if let Some(observer) = &self.inner.seed.observer {
            observer.step_executed(self.inner.seed.job_id, self.inner.seed.run_id, name);
        }
        match result {
            Ok(value) => {
                let output = serde_json::to_value(&value).map_err(|e| {
                    JobError::new(
                        ErrorCode::StepOutputUnserializable,
                        format!("the output of step `{name}` cannot be stored: {e}"),
                    )
                })?;
                crate::limits::check_step_output(self.job_name(), &output)?;
                self.write(name, attempts, |r| {
                    r.status = StepStatus::Completed;
                    r.output = Some(output);
                })
                .await?;
                Ok(value)
            }
            Err(error) => {
                if !self.is_cancelled() {
                    let summary = error.summary();
                    if let Err(unrecorded) = self
                        .write(name, attempts, |r| {
                            r.status = StepStatus::Failed;
                            r.error = Some(summary);
                        })
                        .await
                    {
                        // Bookkeeping must never mask the step's own error.
                        tracing::warn!(
                            target: "jobs.step.failure-unrecorded",
                            job_id = %self.inner.seed.job_id,
                            step = name,
                            code = unrecorded.code().map(|c| c.as_str()),
                            "a failed step could not be recorded"
                        );
                    }
                }
                Err(error)
            }
        }
    }

    /// Suspends the run for `duration` without holding a worker or spending an attempt;
    /// `"3d"` is safe. Returns `Ok` once the time has passed (on a later attempt).
    ///
    /// The step is named `sleep:<duration>`; later sleeps of the same length in one run are
    /// `sleep:<duration>#2`, `#3`...
    ///
    /// A string literal (`run.sleep("3 fortnights")`, `"0s"`) is checked by `#[job]` at compile
    /// time; a computed duration that does not parse or is zero fails the run for good with
    /// `X_INVARIANT`, naming `run.sleep`.
    pub async fn sleep(&self, duration: impl IntoDuration) -> Result<(), JobError> {
        let duration = duration
            .try_into_duration()
            .map_err(|e| e.into_call_error("run.sleep", "duration"))?;
        let name = self.derived_name(&format!("sleep:{}", humantime::format_duration(duration)));
        let previous = self.enter(&name)?;
        let now = self.now();
        match previous {
            Some(r) if r.status == StepStatus::Completed => Ok(()),
            Some(r) if r.status == StepStatus::Sleeping => {
                let wake_at = r.wake_at.unwrap_or(now);
                if now >= wake_at {
                    self.write(&name, r.attempts, |r| r.status = StepStatus::Completed)
                        .await
                } else {
                    Err(self.suspend(wake_at))
                }
            }
            _ => {
                let wake_at = add(now, duration);
                self.write(&name, 1, |r| {
                    r.status = StepStatus::Sleeping;
                    r.wake_at = Some(wake_at);
                })
                .await?;
                Err(self.suspend(wake_at))
            }
        }
    }

    /// Suspends the run until an event `event` is published under `key` (see
    /// `Jobs::publish_event`), or `timeout` passes. Answers the event's payload, or `None` on
    /// timeout. Only events published after the wait began are its own. A payload that does not
    /// parse as `T` is `X_JOB_EVENT_INVALID` (terminal); a name or key over its limit in
    /// [`crate::limits`] is `X_LIMIT_EXCEEDED`. A literal `timeout` is checked by `#[job]` at
    /// compile time; a computed one that does not parse or is zero fails the run for good with
    /// `X_INVARIANT`, naming `run.wait_for_event`.
    pub async fn wait_for_event<T: DeserializeOwned>(
        &self,
        event: &str,
        key: &str,
        timeout: impl IntoDuration,
    ) -> Result<Option<T>, JobError> {
        let timeout = timeout
            .try_into_duration()
            .map_err(|e| e.into_call_error("run.wait_for_event", "timeout"))?;
        crate::limits::check_event_address(event, key)?;
        let name = self.derived_name(&format!("wait:{event}"));
        let previous = self.enter(&name)?;
        let now = self.now();
        let wait = match previous {
            Some(r) if r.status == StepStatus::Completed => {
                return decode_event(event, r.output);
            }
            Some(StepRecord {
                status: StepStatus::Waiting,
                wait: Some(wait),
                ..
            }) => wait,
            _ => {
                let wait = WaitSpec {
                    event: event.to_string(),
                    key: key.to_string(),
                    deadline: add(now, timeout),
                    since: EventSince {
                        at: now,
                        mark: self.inner.seed.driver.event_mark().await?,
                    },
                };
                let stored = wait.clone();
                self.write(&name, 1, |r| {
                    r.status = StepStatus::Waiting;
                    r.wait = Some(stored);
                })
                .await?;
                wait
            }
        };
        if let Some(found) = self
            .inner
            .seed
            .driver
            .event_find(&EventFindParams {
                name: &wait.event,
                key: &wait.key,
                since: &wait.since,
                now,
            })
            .await?
        {
            let payload = found.payload;
            let decoded = decode_event(event, Some(payload.clone()))?;
            self.write(&name, 1, |r| {
                r.status = StepStatus::Completed;
                r.output = Some(payload);
                r.wait = None;
            })
            .await?;
            return Ok(decoded);
        }
        if now >= wait.deadline {
            self.write(&name, 1, |r| {
                r.status = StepStatus::Completed;
                r.output = None;
                r.wait = None;
            })
            .await?;
            return Ok(None);
        }
        let poll = add(now, self.inner.seed.descriptor.event_poll);
        Err(self.suspend(wait.deadline.min(poll)))
    }

    /// Reports how far the run has got. Written at most once a second, and always before the
    /// attempt settles.
    pub async fn progress(
        &self,
        done: u64,
        total: u64,
        note: Option<&str>,
    ) -> Result<(), JobError> {
        if let Some(note) = note {
            crate::limits::check_progress_note(self.job_name(), note)?;
        }
        let now = self.now();
        let due = {
            let mut state = self.state();
            state.progress = Some(Progress {
                done,
                total,
                note: note.map(str::to_string),
            });
            state.progress_dirty = true;
            state
                .progress_written_at
                .is_none_or(|at| now >= add(at, PROGRESS_EVERY))
        };
        if due {
            self.flush_progress().await?;
        }
        Ok(())
    }

    pub(crate) async fn flush_progress(&self) -> Result<(), JobError> {
        let now = self.now();
        let progress = {
            let mut state = self.state();
            if !state.progress_dirty {
                return Ok(());
            }
            state.progress_dirty = false;
            state.progress_written_at = Some(now);
            state.progress.clone()
        };
        if let Some(progress) = progress {
            self.inner
                .seed
                .driver
                .job_progress(&ProgressParams {
                    job_id: self.inner.seed.job_id,
                    by: self.inner.seed.fence.by.clone(),
                    progress,
                    now,
                })
                .await?;
        }
        Ok(())
    }

    /// When a sleep or a wait asked the run to park.
    pub(crate) fn suspended_until(&self) -> Option<Timestamp> {
        self.state().suspend_until
    }

    /// The names of the steps this attempt touched, oldest first (at most [`MAX_TRACE_NAMES`]).
    pub fn trace(&self) -> Vec<String> {
        self.state().trace.iter().cloned().collect()
    }

    /// Claims `name` for this attempt and answers its stored record, if any.
    fn enter(&self, name: &str) -> Result<Option<StepRecord>, JobError> {
        let job = self.inner.seed.descriptor.name;
        crate::limits::check_text(crate::limits::STEP_NAME, &format!("job `{job}`"), name)?;
        let mut state = self.state();
        if let Some(until) = state.suspend_until {
            // The body ignored a suspension; nothing more runs in this attempt.
            return Err(suspension_error(until));
        }
        if !state.seen.insert(name.to_string()) {
            return Err(JobError::new(
                ErrorCode::StepDuplicate,
                format!(
                    "step `{name}` ran twice in one run of job `{}`",
                    self.inner.seed.descriptor.name
                ),
            ));
        }
        if state.trace.len() == MAX_TRACE_NAMES {
            state.trace.pop_front();
        }
        state.trace.push_back(name.to_string());
        Ok(state.stored.get(name).cloned())
    }

    fn derived_name(&self, base: &str) -> String {
        let mut state = self.state();
        let count = state.derived.entry(base.to_string()).or_insert(0);
        *count += 1;
        match *count {
            1 => base.to_string(),
            n => format!("{base}#{n}"),
        }
    }

    fn suspend(&self, until: Timestamp) -> JobError {
        self.state().suspend_until = Some(until);
        suspension_error(until)
    }

    /// A step does not start once the claim's window has passed by this attempt's clock (a
    /// paused process wakes with its renewals overdue): another worker may be running it.
    fn refuse_if_claim_lapsed(&self, name: &str) -> Result<(), JobError> {
        if self.inner.seed.claim_window.holds(self.now()) {
            return Ok(());
        }
        self.inner.seed.cancel.cancel();
        Err(JobError::new(
            ErrorCode::JobLeaseLost,
            format!(
                "job {} went a whole visibility window without a renewal landing; step `{name}` was not started",
                self.inner.seed.job_id
            ),
        ))
    }

    fn refuse_if_cancelled(&self) -> Result<(), JobError> {
        if self.is_cancelled() {
            return Err(JobError::new(
                ErrorCode::Aborted,
                format!(
                    "a cancelled attempt of job `{}` tried to write a step",
                    self.inner.seed.descriptor.name
                ),
            ));
        }
        Ok(())
    }

    /// Writes one step record, fenced on the claim.
    async fn write(
        &self,
        name: &str,
        attempts: u32,
        fill: impl FnOnce(&mut StepRecord),
    ) -> Result<(), JobError> {
        self.refuse_if_cancelled()?;
        let mut record = self
            .state()
            .stored
            .get(name)
            .cloned()
            .unwrap_or(StepRecord {
                run_id: self.inner.seed.run_id,
                name: name.to_string(),
                status: StepStatus::Failed,
                output: None,
                error: None,
                attempts: 0,
                wake_at: None,
                wait: None,
                updated_at: self.now(),
            });
        record.attempts = attempts;
        record.updated_at = self.now();
        fill(&mut record);
        if !self
            .inner
            .seed
            .driver
            .step_put(&StepPutParams {
                record: &record,
                fence: &self.inner.seed.fence,
            })
            .await?
        {
            return Err(JobError::new(
                ErrorCode::JobLeaseLost,
                format!(
                    "job {} no longer holds its claim; step `{name}` was not written",
                    self.inner.seed.job_id
                ),
            ));
        }
        self.state().stored.insert(name.to_string(), record);
        Ok(())
    }
}

fn suspension_error(until: Timestamp) -> JobError {
    JobError::retryable(format!("the run is suspended until {until}"))
}

fn decode_output<T: DeserializeOwned>(
    name: &str,
    output: Option<serde_json::Value>,
) -> Result<T, JobError> {
    serde_json::from_value(output.unwrap_or(serde_json::Value::Null)).map_err(|e| {
        JobError::new(
            ErrorCode::StepRecordInvalid,
            format!(
                "the stored output of step `{name}` no longer parses: {}",
                crate::error::redact_serde(&e)
            ),
        )
    })
}

fn decode_event<T: DeserializeOwned>(
    event: &str,
    payload: Option<serde_json::Value>,
) -> Result<Option<T>, JobError> {
    payload
        .map(|p| {
            serde_json::from_value(p).map_err(|e| {
                JobError::new(
                    ErrorCode::JobEventInvalid,
                    format!(
                        "event `{event}` does not match the type the wait asks for: {}",
                        crate::error::redact_serde(&e)
                    ),
                )
            })
        })
        .transpose()
}
