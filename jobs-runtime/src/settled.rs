//! How a run ended, as told to a job's one `on_settled` hook.

use crate::driver::{JobId, RunId};
use crate::error::ErrorCode;

/// How many times in a row an `on_settled` hook is tried before it is reported failed.
pub const ON_SETTLED_ATTEMPTS: u32 = 3;

/// The ending a hook is told about. A retry, a suspension, a drain or a cancel is not an ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The body returned and the ack landed (row `done`).
    Completed,
    /// Failed for good, parked in the dead-letter queue (row `dead`).
    DeadLettered,
    /// Failed for good with `dead_letter = false` (row `failed`).
    Dropped,
    /// `when_busy = fail` over a busy key; the body never ran (row `failed`).
    Refused,
    /// Not started within its `expires_in`; the body never ran (row `failed`, `X_JOB_EXPIRED`).
    Expired,
}

impl Outcome {
    /// The outcome as the reference spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::DeadLettered => "dead-lettered",
            Outcome::Dropped => "dropped",
            Outcome::Refused => "refused",
            Outcome::Expired => "expired",
        }
    }
}

/// What `on_settled` receives, typed by the job's input and output.
///
/// Runs after the row is settled, by the worker whose settle landed; at most once per ending
/// across a crash, up to [`ON_SETTLED_ATTEMPTS`] tries in process. Write it idempotent.
#[derive(Debug)]
pub struct Settled<I, O> {
    /// How the run ended.
    pub outcome: Outcome,
    /// The job.
    pub job_id: JobId,
    /// The run.
    pub run_id: RunId,
    /// The run's tenant.
    pub tenant: Option<String>,
    /// The input, or `None` when the stored payload no longer parses.
    pub input: Option<I>,
    /// What the body returned (only for `Completed`); in process, never stored.
    pub result: Option<O>,
    /// The error summary for a failed ending (`LEASE_LAPSED_FINAL_ATTEMPT` for a burial).
    pub error: Option<String>,
    /// The error's code, when it had one.
    pub code: Option<ErrorCode>,
}

/// What an `on_settled` hook takes: the [`Settled`] of its own job, `Settled<Input, Output>`.
///
/// `#[job]` hands the settled run to the hook through this trait, so a hook declared over
/// other types is refused with this message, at `on_settled = ..`, instead of a type mismatch
/// inside generated code.
#[diagnostic::on_unimplemented(
    message = "the `on_settled` hook takes `{Self}`, but this job settles with `Settled<{I}, {O}>` (X_JOB_DECLARATION_INVALID)",
    label = "this hook must take `Settled<{I}, {O}>`",
    note = "a hook's parameter is `Settled<Input, Output>`: the job's input type, then the `Ok` type of the job fn's `Result`; write `async fn hook(settled: Settled<{I}, {O}>) -> Result<(), JobError>`"
)]
pub trait SettledHookArg<I, O>: Sized {
    /// The value the hook is called with.
    fn from_settled(settled: Settled<I, O>) -> Self;
}

impl<I, O> SettledHookArg<I, O> for Settled<I, O> {
    fn from_settled(settled: Settled<I, O>) -> Self {
        settled
    }
}
