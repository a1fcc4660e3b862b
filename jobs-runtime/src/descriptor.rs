//! The static description of a declared job: every option `#[job]` resolved, with defaults.
//! It sits below `Run` and `Job` so both can read it without importing each other.

use std::any::Any;
use std::time::Duration;

pub use crate::driver::DependencyFailure;
use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Serialize};

/// A job as the manifest and the worker see it: every declared option, resolved with defaults.
#[derive(Debug, Clone, Copy)]
pub struct JobDescriptor {
    /// The durable name that queued rows carry.
    pub name: &'static str,
    /// The queue the job is enqueued on unless a call says otherwise.
    pub queue: &'static str,
    /// The retry policy.
    pub retry: RetryPolicy,
    /// `false`: a job that fails for good settles `failed` (outcome `dropped`) instead of `dead`.
    pub dead_letter: bool,
    /// Ceiling on one attempt; the run's cancellation fires first, then `X_JOB_TIMEOUT`.
    pub timeout: Option<Duration>,
    /// Ceiling on one `step`.
    pub step_timeout: Option<Duration>,
    /// How long a parked `wait_for_event` waits between polls.
    pub event_poll: Duration,
    /// The fleet-wide cap, if declared.
    pub concurrency: Option<Concurrency>,
    /// `expires_in`: a job whose first attempt has not started this long after its enqueue is
    /// discarded when a worker reaches it (state `failed`, `X_JOB_EXPIRED`), never run.
    pub expires_in: Option<Duration>,
    /// `debounce`: an enqueue waits this long before its job is due, and an enqueue of a key
    /// whose job is still queued gives that job its input and pushes its run time back to
    /// now + `debounce` (answered deduped); once the job has started, an enqueue of its key
    /// dedupes as always. A task's fires never debounce.
    pub debounce: Option<Duration>,
    /// `unique(for = "1h")`: a job holds its key for this long after its enqueue (its row's
    /// creation), finished or not, so an enqueue of the key within the period answers it
    /// (deduped) even once it completed, failed or was cancelled; after the period the next
    /// enqueue makes a new job. Without it a key is held only while its job is live. An
    /// enqueue may name another period ([`EnqueueOptions::unique_for`](crate::EnqueueOptions::unique_for)).
    pub unique_for: Option<Duration>,
    /// The fleet-wide start rate, if declared.
    pub rate: Option<RateLimit>,
    /// How the run's tenant is derived.
    pub tenant: TenantMode,
    /// The Rust path of the input type, for people reading the manifest.
    pub input_type: &'static str,
    /// The JSON Schema of the input.
    pub input_schema: fn() -> serde_json::Value,
    /// Whether an `on_settled` hook is declared.
    pub on_settled: bool,
    /// `priority = N`: within its queue and its tenant's turn, a higher priority is claimed
    /// first, then the earlier run time; [`MIN_PRIORITY`](crate::driver::MIN_PRIORITY)..=
    /// [`MAX_PRIORITY`](crate::driver::MAX_PRIORITY), default
    /// [`DEFAULT_PRIORITY`](crate::driver::DEFAULT_PRIORITY) (0). An enqueue may name another
    /// ([`EnqueueOptions::priority`](crate::EnqueueOptions::priority)).
    pub priority: i16,
    /// `on_dependency_failure = run_anyway`: what the job does, when it is enqueued with dependencies
    /// ([`EnqueueOptions::depends_on`](crate::EnqueueOptions::depends_on)), if one of them ends
    /// `failed`, `dead` or `cancelled`; default [`DependencyFailure::Cancel`]. An enqueue may
    /// name another ([`EnqueueOptions::on_dependency_failure`](crate::EnqueueOptions::on_dependency_failure)).
    pub on_dependency_failure: DependencyFailure,
    /// `keep_result`: the body's `Ok` value is serialised to JSON and stored with the job when
    /// it settles `done` ([`JobRecord::result`](crate::JobRecord::result)), within
    /// [`MAX_RESULT_BYTES`](crate::limits::MAX_RESULT_BYTES). `None`: the output stays in
    /// process, for `on_settled` only.
    pub result: Option<KeptResult>,
}

impl JobDescriptor {
    /// The reference's defaults: queue `default`, [`RetryPolicy::DEFAULT`], dead letters on,
    /// no timeouts, a 30 s event poll, no concurrency cap, no rate limit, no expiry, no
    /// debounce, no unique period, priority 0, dependents cancelled when a dependency fails.
    pub const fn new(
        name: &'static str,
        tenant: TenantMode,
        input_type: &'static str,
        input_schema: fn() -> serde_json::Value,
    ) -> Self {
        JobDescriptor {
            name,
            queue: DEFAULT_QUEUE,
            retry: RetryPolicy::DEFAULT,
            dead_letter: true,
            timeout: None,
            step_timeout: None,
            event_poll: DEFAULT_EVENT_POLL,
            concurrency: None,
            expires_in: None,
            debounce: None,
            unique_for: None,
            rate: None,
            tenant,
            input_type,
            input_schema,
            on_settled: false,
            priority: crate::driver::DEFAULT_PRIORITY,
            on_dependency_failure: DependencyFailure::Cancel,
            result: None,
        }
    }
}

/// What a job that keeps its result (`#[job(.., keep_result)]`) stores: its output type as the
/// manifest shows it, its JSON Schema, and how a body's output becomes the stored JSON.
///
/// ```
/// let kept = jobs::KeptResult::of::<Vec<u64>>("Vec<u64>");
/// assert_eq!(kept.output_type, "Vec<u64>");
/// assert_eq!((kept.output_schema)()["type"], "array");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct KeptResult {
    /// The Rust path of the output type (the body's `Ok` type), for people reading the manifest.
    pub output_type: &'static str,
    /// The JSON Schema of the output.
    pub output_schema: fn() -> serde_json::Value,
    /// Serialises an output of the declared type; `None` when handed another type.
    to_json: fn(&(dyn Any + Send)) -> Option<Result<serde_json::Value, serde_json::Error>>,
}

impl KeptResult {
    /// Keeps outputs of type `T`, named `output_type` in the manifest. `T` must be a
    /// [`JobOutput`]: `#[job(.., keep_result)]` on a body whose `Ok` type is not is a compile
    /// error.
    pub const fn of<T: JobOutput>(output_type: &'static str) -> Self {
        KeptResult {
            output_type,
            output_schema: schema_of::<T>,
            to_json: to_json::<T>,
        }
    }

    /// The stored JSON of `output`, a body's output type-erased: `None` when it is not of the
    /// declared type (a hand-written `Job` whose descriptor names another type), else
    /// serde's answer.
    pub(crate) fn json_of(
        &self,
        output: &(dyn Any + Send),
    ) -> Option<Result<serde_json::Value, serde_json::Error>> {
        (self.to_json)(output)
    }
}

/// The JSON Schema of `T`, as a JSON value (as an input's is made).
fn schema_of<T: JsonSchema>() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default()
}

fn to_json<T: JobOutput>(
    output: &(dyn Any + Send),
) -> Option<Result<serde_json::Value, serde_json::Error>> {
    output.downcast_ref::<T>().map(serde_json::to_value)
}

/// What a kept result must be (`#[job(.., keep_result)]`): serialised into the store, parsed
/// back by a typed read ([`Jobs::job_result`](crate::Jobs::job_result)), and described by a
/// JSON Schema in the manifest, as an input is.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a kept job result (X_JOB_DECLARATION_INVALID)",
    label = "`keep_result` stores the body's `Ok` value: it must implement serde's `Serialize` and `Deserialize` and schemars 1.x's `JsonSchema`",
    note = "derive them on `{Self}` with `#[derive(Serialize, Deserialize, JsonSchema)]` from `jobs::prelude` (or put `#[input]` on it), or drop `keep_result` to keep the output in process only"
)]
pub trait JobOutput: Serialize + DeserializeOwned + JsonSchema + Send + 'static {}

impl<T> JobOutput for T where T: Serialize + DeserializeOwned + JsonSchema + Send + 'static {}

/// The queue a job lands on when its declaration names none.
pub const DEFAULT_QUEUE: &str = "default";
/// How long a parked `wait_for_event` waits between polls by default (30 s).
pub const DEFAULT_EVENT_POLL: Duration = Duration::from_secs(30);

/// `retry(attempts, backoff, delay, max_delay, jitter)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts including the first run; `1` means no retry. Never 0.
    pub attempts: u32,
    /// The delay curve.
    pub backoff: Backoff,
    /// The base delay.
    pub delay: Duration,
    /// The ceiling on any one delay.
    pub max_delay: Duration,
    /// How much of each delay is random.
    pub jitter: Jitter,
}

impl RetryPolicy {
    /// 3 attempts, exponential from 1 s, capped at 1 h, equal jitter.
    pub const DEFAULT: RetryPolicy = RetryPolicy {
        attempts: 3,
        backoff: Backoff::Exponential,
        delay: Duration::from_secs(1),
        max_delay: Duration::from_secs(3600),
        jitter: Jitter::Equal,
    };
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::DEFAULT
    }
}

/// The retry delay curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backoff {
    /// Every delay is the base delay.
    Fixed,
    /// `delay * attempt`.
    Linear,
    /// `delay * 2^(attempt - 1)`.
    Exponential,
}

impl Backoff {
    /// The name as declared and as the manifest shows it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Backoff::Fixed => "fixed",
            Backoff::Linear => "linear",
            Backoff::Exponential => "exponential",
        }
    }
}

/// How much of a retry delay is random, so a burst of failures does not retry in lockstep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// Anywhere between zero and the delay.
    Full,
    /// Half fixed, half random (the default).
    Equal,
    /// Exactly the delay.
    None,
}

impl Jitter {
    /// The name as declared and as the manifest shows it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::None => "none",
        }
    }
}

/// A fleet-wide cap on a job's in-flight runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Concurrency {
    /// Runs allowed at once (per key when keyed). At least 1.
    pub limit: u32,
    /// Whether the cap is per `concurrency(key = ..)`.
    pub keyed: bool,
    /// What a keyed run does when its key is busy.
    pub when_busy: WhenBusy,
}

/// A fleet-wide limit on a job's starts over a sliding window: `rate(limit = 100, per = "1m")`,
/// or per key with `rate(.., key = "{customer_id}")`.
///
/// No window of length `per` ever holds more than `limit` starts, across every worker process:
/// each start takes one of `limit` slots of the job's (or the key's) rate key in the lease
/// store for `per`, and never gives it back. A run over the limit is handed back without
/// spending an attempt, due again exactly when the earliest of those slots lapses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Starts allowed per window (per key when keyed). At least 1.
    pub limit: u32,
    /// The window. At least 1 ms.
    pub per: Duration,
    /// Whether the limit is per `rate(key = ..)`.
    pub keyed: bool,
}

/// What a keyed run does when its key already holds `limit` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenBusy {
    /// Stay ready and try again later (the default).
    Wait,
    /// Settle `failed` with `X_JOB_KEY_BUSY` (outcome `refused`).
    Fail,
}

impl WhenBusy {
    /// The name as declared and as the manifest shows it.
    pub const fn as_str(self) -> &'static str {
        match self {
            WhenBusy::Wait => "wait",
            WhenBusy::Fail => "fail",
        }
    }
}

/// How a job's tenant is derived from its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenantMode {
    /// `tenant = none`: the run belongs to no tenant.
    None,
    /// `tenant = field`: a field of the input.
    Field(&'static str),
    /// `tenant = <expression>`: computed from the input.
    Derived,
}
