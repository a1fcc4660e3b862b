//! The `Job` trait that `#[job]` implements, and the static description of a declared job.

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Serialize};

use crate::descriptor::JobDescriptor;
use crate::error::JobError;
use crate::run::Run;
use crate::settled::Settled;

/// A declared job. `#[job]` implements it on a unit struct named after the function
/// (`send_welcome` -> `SendWelcome`); user code rarely names the trait itself.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a job",
    label = "not a `#[job]` handle",
    note = "name a job by the handle `#[job]` generates for it (`send_digest` -> `SendDigest`), e.g. `Entry::of::<SendDigest>(input)`, never by a string"
)]
pub trait Job: Send + Sync + 'static {
    /// What `enqueue` takes and the body receives.
    type Input: JobInput;
    /// What the body returns: kept in process for `on_settled`, and stored with the job only
    /// when the declaration keeps it (`keep_result`, [`JobDescriptor::result`]).
    type Output: Send + 'static;

    /// Everything the declaration states, decided at compile time.
    const DESCRIPTOR: JobDescriptor;

    /// The idempotency key for `input`: deterministic, from the input only.
    fn idempotency_key(input: &Self::Input) -> String;

    /// The tenant the run belongs to, or `None` for `tenant = none`.
    fn tenant(input: &Self::Input) -> Option<String>;

    /// The key a keyed `concurrency(key = ..)` counts the run under.
    fn concurrency_key(_input: &Self::Input) -> Option<String> {
        None
    }

    /// The key a keyed `rate(key = ..)` counts the run's start under.
    fn rate_key(_input: &Self::Input) -> Option<String> {
        None
    }

    /// The body.
    fn run(run: Run, input: Self::Input) -> BoxFuture<'static, Result<Self::Output, JobError>>;

    /// The one ending hook (`on_settled = path`); does nothing unless declared.
    fn on_settled(
        _settled: Settled<Self::Input, Self::Output>,
    ) -> BoxFuture<'static, Result<(), JobError>> {
        Box::pin(async { Ok(()) })
    }
}

/// What a job input must be: serializable into the queue, parseable back out, and described by
/// a JSON Schema for the manifest.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a job input (X_JOB_DECLARATION_INVALID)",
    label = "a job input must implement serde's `Serialize` and `Deserialize` and schemars 1.x's `JsonSchema`",
    note = "put `#[input]` (from `jobs::prelude`) on `{Self}`: it derives all three through the serde and schemars 1.x that `jobs` uses, with no dependency of your own",
    note = "a `JsonSchema` derived with another schemars major (0.8 or older) does not count: jobs is built on schemars 1.x"
)]
pub trait JobInput: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static {}

impl<T> JobInput for T where T: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static {}

/// What a job body (or an `on_settled` hook) returns: a `Result` whose error converts into
/// [`JobError`].
#[diagnostic::on_unimplemented(
    message = "a `#[job]` fn (and its `on_settled` hook) must return `Result<Output, E>`, found `{Self}` (X_JOB_DECLARATION_INVALID)",
    label = "return `Result<_, JobError>` (or any error that converts into `JobError`)"
)]
pub trait JobReturn: Send + 'static {
    /// The `Ok` type.
    type Output: Send + 'static;
    /// Converts the error side into a [`JobError`].
    fn into_job_result(self) -> Result<Self::Output, JobError>;
}

impl<T, E> JobReturn for Result<T, E>
where
    T: Send + 'static,
    E: Into<JobError> + Send + 'static,
{
    type Output = T;
    fn into_job_result(self) -> Result<T, JobError> {
        self.map_err(Into::into)
    }
}
