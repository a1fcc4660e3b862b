//! The attribute macros of the `jobs` crate. Use them through `jobs` (`#[jobs::job(..)]`, or
//! `#[job(..)]` after `use jobs::prelude::*`); this crate is an implementation detail and its
//! version is pinned to the runtime's.
//!
//! Each macro is three stages, in three places: parse the arguments (`args`, into typed values
//! in `value` and the declaration in `model`), check every rule (`check`), and only then expand
//! (`expand`). Errors are collected, not returned early, so a declaration's problems are
//! reported together, each at the argument it is about.

#![warn(missing_docs, rust_2018_idioms)]

use proc_macro::TokenStream;

mod args;
mod check;
mod errors;
mod expand;
mod model;
mod value;

/// Declares a durable background job: an `async fn` taking the run context and an input, run
/// at least once by a worker, with durable steps, retries and limits.
///
/// ```ignore
/// use jobs::prelude::*;
///
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// pub struct Welcome {
///     pub user_id: u64,
///     pub org_id: String,
/// }
///
/// #[jobs::job(key = "welcome:{user_id}", tenant = org_id, queue = "email")]
/// pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
///     run.step("send", async { mailer::send(input.user_id).await }).await?;
///     Ok(())
/// }
///
/// // elsewhere: the handle type is named after the fn
/// let queued = SendWelcome::enqueue(&jobs, Welcome { user_id: 7, org_id: "acme".into() }).await?;
/// ```
///
/// The fn must be `async`, take exactly two parameters (the run context, then the input by
/// value) and return `Result<Output, E>` where `E` converts into `JobError`. The input must
/// implement `Serialize`, `Deserialize` and `JsonSchema`: it is stored in the queue and its
/// schema is published in the manifest.
///
/// # What it generates
///
/// Next to the unchanged fn:
///
/// - a unit struct, the *handle*, named in PascalCase after the fn (`send_welcome` ->
///   `SendWelcome`, or `handle = ..`), with the fn's visibility;
/// - `impl Job for SendWelcome`: the input and output types, a `const DESCRIPTOR` holding every
///   declared option, the key and tenant derivations, and the body;
/// - `SendWelcome::enqueue(&jobs, input)`, `enqueue_with(&jobs, input, options)`,
///   `enqueue_many(&jobs, inputs)` and `SendWelcome::descriptor()`;
/// - a registry entry, so `jobs::manifest()` and every worker see the job without a list;
/// - a compile-time assertion that the input is a valid job input.
///
/// Roughly, the example above stands for:
///
/// ```ignore
/// pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> { /* .. */ }
///
/// #[derive(Debug, Clone, Copy, Default)]
/// pub struct SendWelcome;
///
/// impl jobs::Job for SendWelcome {
///     type Input = Welcome;
///     type Output = ();
///     const DESCRIPTOR: JobDescriptor = /* name "send_welcome", queue "email", .. */;
///     fn idempotency_key(input: &Welcome) -> String { format!("welcome:{}", input.user_id) }
///     fn tenant(input: &Welcome) -> Option<String> { Some(input.org_id.to_string()) }
///     fn run(run: Run, input: Welcome) -> BoxFuture<'static, Result<(), JobError>> {
///         Box::pin(async move { send_welcome(run, input).await })
///     }
/// }
/// ```
///
/// # Name and queue
///
/// `name = "send-welcome"` sets the durable name that queued and dead-lettered rows carry
/// (default: the fn's name, `send_welcome`); renaming the fn never moves delivery once the name
/// is set. `queue = "email"` picks the queue (default `"default"`). `handle = Welcomer` names
/// the generated type.
///
/// # Key (required)
///
/// Every job has an idempotency key, derived from the input only: while a run with the same
/// key is live (ready, delayed, running or suspended), enqueueing again answers that run with
/// `deduped: true` instead of queueing a second one.
///
/// A template names fields of the input in braces; `{{` and `}}` are literal braces, `{0}`
/// reads a tuple struct's field and `{account.id}` a nested one. A field the input lacks is a
/// compile error at the template.
///
/// ```ignore
/// #[jobs::job(key = "invoice:{org_id}:{invoice_id}", tenant = org_id)]
/// ```
///
/// Anything callable as `Fn(&Input) -> impl ToString` works too, a closure or a fn path:
///
/// ```ignore
/// #[jobs::job(key = |input| format!("digest:{}", input.day), tenant = none)]
/// #[jobs::job(key = keys::digest, tenant = none)]
/// ```
///
/// # Tenant (required)
///
/// Every job states which tenant a run belongs to: a field of the input
/// (`tenant = org_id`), a callable over the input (`tenant = |input| input.org.id.clone()`), or
/// `tenant = none` for work that belongs to no tenant (tenant-scoped reads then fail closed).
///
/// ```ignore
/// #[jobs::job(key = "sync:{account_id}", tenant = org_id)]
/// #[jobs::job(key = "nightly", tenant = none)]
/// ```
///
/// # Retry
///
/// `retry(..)` overrides any of: `attempts` (including the first run, at least 1, default 3),
/// `backoff` (`fixed`, `linear` or `exponential`, the default), `delay` (the base delay,
/// default `"1s"`), `max_delay` (the ceiling on one delay, default `"1h"`) and `jitter`
/// (`full`, `equal`, the default, or `none`). `dead_letter = false` settles a run that fails
/// for good as `failed` instead of moving it to the dead-letter queue.
///
/// ```ignore
/// #[jobs::job(
///     key = "charge:{order_id}",
///     tenant = org_id,
///     retry(attempts = 5, backoff = exponential, delay = "2s", max_delay = "10m", jitter = full),
///     dead_letter = false,
/// )]
/// ```
///
/// # Timeouts
///
/// Durations are string literals such as `"500ms"`, `"30s"`, `"10m"`, `"1h 30m"` or `"3d"`,
/// read at compile time; zero, negative and unreadable ones are refused at the literal.
/// `timeout` is the ceiling on one attempt (the run's cancellation fires first, then the
/// attempt fails with `X_JOB_TIMEOUT`); `step_timeout` is the ceiling on one step;
/// `event_poll` is how long a parked `wait_for_event` waits between polls (default `"30s"`).
///
/// ```ignore
/// #[jobs::job(key = "export:{export_id}", tenant = org_id,
///             timeout = "10m", step_timeout = "30s", event_poll = "5s")]
/// ```
///
/// # Concurrency
///
/// `concurrency = 3` caps this job's in-flight runs across the whole fleet. The keyed form caps
/// runs per key: `key` is a template or callable like the idempotency key, `limit` (required,
/// at least 1) is the runs allowed at once per key, and `when_busy` says what a run does when
/// its key is full: `wait` (the default: stay ready and try later) or `fail` (settle failed
/// with `X_JOB_KEY_BUSY`).
///
/// ```ignore
/// #[jobs::job(key = "push:{user_id}", tenant = org_id, concurrency = 3)]
/// #[jobs::job(
///     key = "sync:{account_id}",
///     tenant = org_id,
///     concurrency(key = "{account_id}", limit = 1, when_busy = wait),
/// )]
/// ```
///
/// There is no `priority` (queues and per-queue worker slots are the prioritisation mechanism)
/// and no `rate_limit` (rate is limited per worker process, on the worker).
///
/// # on_settled
///
/// `on_settled = path` names one async hook, called once when a run settles for good, with the
/// input and the typed result of the body:
///
/// ```ignore
/// #[jobs::job(key = "welcome:{user_id}", tenant = org_id, on_settled = welcome_settled)]
/// pub async fn send_welcome(run: Run, input: Welcome) -> Result<Receipt, JobError> { /* .. */ }
///
/// async fn welcome_settled(settled: Settled<Welcome, Receipt>) -> Result<(), JobError> {
///     audit::record(&settled).await
/// }
/// ```
///
/// # Steps
///
/// Step names are the keys under which step outputs are stored, so a literal step name used
/// twice in one body is a compile error (`X_STEP_DUPLICATE`).
///
/// # Runtime crate path
///
/// Generated code names the runtime as `::jobs`; `crate = "::my_facade::jobs"` changes that
/// when the runtime is re-exported under another path.
#[proc_macro_attribute]
pub fn job(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    expand::job::expand(args.into(), item.clone())
        .unwrap_or_else(|errors| expand::fallback::with_errors(item, errors))
        .into()
}

/// Declares a cron trigger that enqueues jobs. Not implemented yet.
#[proc_macro_attribute]
pub fn task(_args: TokenStream, item: TokenStream) -> TokenStream {
    expand::fallback::not_yet("task", item.into()).into()
}

/// Declares a backfill over existing rows. Not implemented yet.
#[proc_macro_attribute]
pub fn backfill(_args: TokenStream, item: TokenStream) -> TokenStream {
    expand::fallback::not_yet("backfill", item.into()).into()
}

/// Declares a double-entry ledger posting job. Not implemented yet.
#[proc_macro_attribute]
pub fn ledger(_args: TokenStream, item: TokenStream) -> TokenStream {
    expand::fallback::not_yet("ledger", item.into()).into()
}
