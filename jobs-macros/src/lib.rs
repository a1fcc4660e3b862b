//! The attribute macros of the `jobs` crate. Use them through `jobs` (`#[jobs::job(..)]`, or
//! `#[job(..)]` after `use jobs::prelude::*`); this crate is an implementation detail and its
//! version is pinned to the runtime's.
//!
//! Each attribute goes through one pipeline (`expand::pipeline`): darling reads the arguments
//! (`args`) straight into typed values (`value`), the arguments the attributes share being one
//! flattened struct; `model` applies the defaults; `check` applies every rule; and only then is
//! the declaration emitted (`expand`, one file per attribute for what is its own, one emitter
//! for every job descriptor). Errors are collected, not returned early, so a declaration's
//! problems are reported together, each at the argument it is about. darling's structural
//! errors keep darling's words and gain the declaration's code.

#![warn(missing_docs, rust_2018_idioms)]

use proc_macro::TokenStream;

mod args;
mod check;
mod derive;
mod errors;
mod expand;
mod input;
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
///   `SendWelcome`, or `handle = ..`), with the fn's visibility. A handle may not share its
///   name with the fn or with the input type (`fn tenant_sync(run: Run, input: TenantSync)`
///   is refused): name it with `handle = TenantSyncJob`;
/// - `impl Job for SendWelcome`: the input and output types, a `const DESCRIPTOR` holding every
///   declared option, the key and tenant derivations, and the body;
/// - `SendWelcome::enqueue(&jobs, input)`, `enqueue_with(&jobs, input, options)`,
///   `enqueue_many(&jobs, inputs)` and `SendWelcome::descriptor()` (and, for a job declared
///   `keep_result`, `SendWelcome::result(&jobs, id)`);
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
/// read at compile time; zero, negative and unreadable ones are refused at the literal. The
/// same rule reads a literal given to `run.sleep("3d")` or `run.wait_for_event(event, key,
/// "1h")` in the body; a computed one is checked when the call runs (`X_INVARIANT`, naming
/// the call).
/// `timeout` is the ceiling on one attempt (the run's cancellation fires first, then the
/// attempt fails with `X_JOB_TIMEOUT`); `step_timeout` is the ceiling on one step;
/// `event_poll` is how long a parked `wait_for_event` waits between polls (default `"30s"`).
/// `expires_in` discards a job whose first attempt has not started that long after its
/// enqueue: the worker that reaches it settles it `failed` with `X_JOB_EXPIRED`, never running
/// it (default: never expires; a retry has started, so it never expires).
///
/// ```ignore
/// #[jobs::job(key = "export:{export_id}", tenant = org_id,
///             timeout = "10m", step_timeout = "30s", event_poll = "5s", expires_in = "1h")]
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
/// # Rate
///
/// `rate(limit = 100, per = "1m")` limits this job's starts across the whole fleet: no window
/// of length `per` ever holds more than `limit` starts. With `key` (a template or callable like
/// the idempotency key) the limit holds per key. A run over the limit waits, without spending
/// an attempt, until the window frees a start. `limit` is at least 1 and `per` a positive
/// duration; both are required.
///
/// ```ignore
/// #[jobs::job(key = "charge:{charge_id}", tenant = customer_id,
///             rate(limit = 100, per = "1m", key = "{customer_id}"))]
/// ```
///
/// There is no `rate_limit`: write `rate(limit = .., per = ..)`.
///
/// # Dependencies
///
/// An enqueue may name jobs this one waits for (`EnqueueOptions::depends_on`).
/// `on_dependency_failure` says what it does when one of them ends failed, dead or cancelled:
/// `cancel` (the default: it is cancelled with `X_JOB_DEPENDENCY_FAILED`, and so are the jobs
/// depending on it) or `run_anyway` (it runs anyway once every dependency has ended). An enqueue may
/// name another (`EnqueueOptions::on_dependency_failure`).
///
/// ```ignore
/// #[jobs::job(key = "report:{day}", tenant = none, on_dependency_failure = run_anyway)]
/// ```
///
/// # Unique period
///
/// A job holds its idempotency key while it is live, so an enqueue of the key answers it
/// (`deduped`). `unique(for = "1h")` keeps the key held for that long after the job's enqueue
/// (the creation of its row), whether it is still live or has completed, failed, died or been
/// cancelled: an enqueue of the key within the hour answers that job, and the first one after
/// makes a new job. The period is a positive duration of at most 10 years. With `debounce`, the
/// period must be longer than the window (else it could never hold a finished job), and the two
/// compose: while queued the job takes the latest input, once finished it still answers its
/// key until the period ends. An enqueue may name another period with
/// `EnqueueOptions::unique_for`.
///
/// ```ignore
/// #[jobs::job(key = "digest:{user_id}", tenant = org_id, unique(for = "24h"))]
/// ```
///
/// # Priority
///
/// `priority = N` (a whole number from -5 to 5; default 0) orders a queue's due rows within
/// each tenant's turn: the higher priority is claimed first, then the earlier run time.
/// Tenants still take turns first (one row per tenant per turn), so a tenant's urgent work
/// never starves another tenant; within a turn the higher priority goes first. A value outside
/// the range is refused at compile time (`X_JOB_DECLARATION_INVALID`); an enqueue may name
/// another priority with `EnqueueOptions::priority`, refused outside the range with
/// `X_INVARIANT`.
///
/// ```ignore
/// #[jobs::job(key = "page:{incident_id}", tenant = org_id, priority = 5)]
/// ```
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
/// # Results
///
/// `keep_result` stores the body's `Ok` value with the job when it settles `done`, serialised
/// to JSON, within `jobs::limits::MAX_RESULT_BYTES` (a larger one fails the job, terminally,
/// with `X_LIMIT_EXCEEDED`). The output type must then implement `Serialize`, `Deserialize`
/// and `JsonSchema` (a compile error at the return type otherwise), the manifest shows its
/// schema, and the handle gains a typed read, `CountOrders::result(&jobs, id)`. Without it the
/// output stays in process, for `on_settled` only.
///
/// ```ignore
/// #[jobs::job(key = "count:{day}", tenant = none, keep_result)]
/// pub async fn count_orders(run: Run, input: Day) -> Result<u64, JobError> { /* .. */ }
///
/// let counted: Option<u64> = CountOrders::result(&jobs, queued.id).await?;
/// ```
///
/// # Steps
///
/// Step names are the keys under which step outputs are stored, so a literal step name used
/// twice on one path through the body is a compile error (`X_STEP_DUPLICATE`). The arms of an
/// `if`/`else` or a `match` exclude each other, so a name may repeat across them (the
/// condition must come from the input or earlier steps, as everything in a durable body).
///
/// A step's output is stored and read back on a later attempt, so it owns its data: a step
/// visibly answering a borrowed value (`Ok("text")`, `let s: &str = run.step(..)`) is refused
/// with the owned type to write (`String`), `X_STEP_OUTPUT_UNSERIALIZABLE`.
///
/// # Errors
///
/// Every refusal names its code and the fix, at the argument it is about. A refused `#[job]`
/// still emits its handle (same name, methods and `Job` impl, never run), so call sites add
/// no errors of their own. An `on_settled` hook over the wrong types is refused at
/// `on_settled = ..`. A key, tenant or concurrency template naming a field the input lacks is
/// rustc's `no field` error at the template, with the input's fields listed.
///
/// # Runtime crate path
///
/// Generated code names the runtime as `::jobs`; `crate = "::my_facade::jobs"` changes that
/// when the runtime is re-exported under another path.
#[proc_macro_attribute]
pub fn job(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::pipeline::run::<expand::job::Job>(args.into(), item.into())
        .unwrap_or_else(expand::fallback::Refused::into_tokens)
        .into()
}

/// Declares a task: a cron trigger that only enqueues jobs. A plain fn turns each occurrence
/// of the schedule into the jobs to enqueue; the scheduler calls it once per occurrence and
/// enqueues what it answers.
///
/// ```ignore
/// use jobs::prelude::*;
///
/// #[jobs::task(cron = "0 9 * * 1-5", tz = "Europe/Paris")]
/// pub fn weekday_digest(at: Occurrence) -> Vec<Entry> {
///     vec![Entry::of::<SendDigest>(Digest { day: at.date().to_string() })]
/// }
/// ```
///
/// The fn is a plain (not `async`) fn taking exactly one parameter, the occurrence (by value,
/// `Occurrence`, or by reference, `&Occurrence`), and returning the entries to enqueue,
/// `Vec<Entry>`. It is cheap and synchronous, and builds its entries from the occurrence only,
/// never from the wall clock: an occurrence fired twice (a handover, a catch-up) must answer
/// the same jobs. Zero entries is a valid no-op tick.
///
/// # What it generates
///
/// Next to the unchanged fn:
///
/// - a unit struct, the *handle*, named in PascalCase after the fn (`weekday_digest` ->
///   `WeekdayDigest`, or `handle = ..`), with the fn's visibility;
/// - `impl Task for WeekdayDigest`: a `const DESCRIPTOR` holding the declaration, and
///   `entries(&occurrence)`, which calls the fn;
/// - `WeekdayDigest::enqueue(&jobs)`, which fires the task now, by hand (its entries for the
///   occurrence "now", under each job's plain idempotency key), `WeekdayDigest::next_run(from)`,
///   the next occurrence strictly after `from` (no scheduler needed), and
///   `WeekdayDigest::descriptor()`;
/// - a registry entry, so the scheduler and `jobs::manifest()` see the task without a list.
///
/// Roughly, the example above stands for:
///
/// ```ignore
/// pub fn weekday_digest(at: Occurrence) -> Vec<Entry> { /* .. */ }
///
/// #[derive(Debug, Clone, Copy, Default)]
/// pub struct WeekdayDigest;
///
/// impl jobs::Task for WeekdayDigest {
///     const DESCRIPTOR: TaskDescriptor =
///         TaskDescriptor::new("weekday_digest", "0 9 * * 1-5", "Europe/Paris");
///     fn entries(occurrence: &Occurrence) -> Vec<Entry> {
///         weekday_digest(*occurrence).into_iter().collect()
///     }
/// }
///
/// impl WeekdayDigest {
///     pub async fn enqueue(jobs: &Jobs) -> Result<Vec<Enqueued>, JobError> {
///         jobs::fire_now::<Self>(jobs).await
///     }
///     pub fn next_run(from: Timestamp) -> Option<Timestamp> { jobs::next_run::<Self>(from) }
///     pub const fn descriptor() -> TaskDescriptor { <Self as Task>::DESCRIPTOR }
/// }
/// ```
///
/// # Schedule: cron and tz (both required)
///
/// `cron` is a standard 5-field expression, `minute hour day-of-month month day-of-week`:
/// numbers, `*`, ranges `1-5`, lists `1,15`, steps `*/15`, month names `jan`..`dec` and day
/// names `sun`..`sat` (Sunday is `0` or `7`). There is no seconds field, no year field and no
/// `@hourly`-style alias: write `"0 * * * *"` for hourly and `"0 0 * * *"` for daily. The
/// expression is checked at compile time, each field against its range.
///
/// `tz` is the IANA zone the cron is read in (`"Europe/Paris"`, `"America/Bogota"`, `"UTC"`),
/// checked against the tz database the runtime is built with; a near miss is refused with the
/// zone it probably means (`"Bogota"` -> `America/Bogota`).
///
/// ```ignore
/// #[jobs::task(cron = "*/15 * * * *", tz = "UTC")]
/// fn sync_rates(at: &Occurrence) -> Vec<Entry> {
///     vec![Entry::of::<SyncRates>(RatesAt { at_ms: at.timestamp_millis() })]
/// }
/// ```
///
/// A scheduled fire enqueues each entry under the key `<task>:<occurrence ms>:<job's key>`, so
/// an occurrence fired twice enqueues its jobs once.
///
/// # Name
///
/// `name = "nightly"` sets the durable name the scheduler keeps its watermark under (default:
/// the fn's name); renaming the fn never loses the task's place once the name is set.
/// `handle = Nightly` names the generated type.
///
/// # Catch-up
///
/// What the scheduler does about occurrences missed while no scheduler was leading:
///
/// - `catch_up = skip` (the default): fire only the latest missed occurrence;
/// - `catch_up = run_once`: fire the earliest missed occurrence, once, and pass the rest;
/// - `catch_up = run_all`: fire every missed occurrence, at most `max_catch_up` per round
///   (default 10, at least 1).
///
/// The spellings `"skip"`, `"run-once"` and `"run-all"` are accepted too. `max_catch_up`
/// bounds `run_all` only, so it is refused next to another policy.
///
/// ```ignore
/// #[jobs::task(name = "nightly", cron = "30 1 * * *", tz = "America/Bogota",
///              catch_up = run_all, max_catch_up = 5)]
/// fn nightly(at: Occurrence) -> Vec<Entry> { vec![] }
/// ```
///
/// # What a task does not take
///
/// A task never runs a body, so a body's options (`retry`, `timeout`, `step_timeout`,
/// `event_poll`, `concurrency`, `queue`, `dead_letter`, `key`, `tenant`, `on_settled`) are
/// refused: each belongs on the `#[job]` the task enqueues, and the job brings it along.
/// Entries name jobs by their handle type (`Entry::of::<SendDigest>(input)`), never by a
/// string, so a misnamed job or a wrong input is a type error.
///
/// # Runtime crate path
///
/// Generated code names the runtime as `::jobs`; `crate = "::my_facade::jobs"` changes that
/// when the runtime is re-exported under another path.
#[proc_macro_attribute]
pub fn task(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::pipeline::run::<expand::task::Task>(args.into(), item.into())
        .unwrap_or_else(expand::fallback::Refused::into_tokens)
        .into()
}

/// Declares a backfill: a throttled, resumable pass over existing rows, as a real job.
///
/// It goes on the **per-page handler**, an `async fn` taking the pass and the page's rows; the
/// declaration names the **keyset source** that reads each page:
///
/// ```ignore
/// use jobs::prelude::*;
///
/// /// Keyset, never OFFSET: the page after `after`, in id order.
/// async fn users_without_name(pass: Pass, after: Option<i64>, limit: u32)
///     -> Result<Page<UserRow, i64>, JobError>
/// {
///     let db = pass.context::<Db>()?;
///     let rows = db.users_without_name_after(after.unwrap_or(0), limit).await?;
///     Ok(Page::keyed(rows, |row| row.id))
/// }
///
/// #[jobs::backfill(name = "users.display-name", tenant = none, source = users_without_name,
///                  batch = 1000, rate = 5.0)]
/// async fn fill_display_name(pass: Pass, rows: Vec<UserRow>) -> Result<(), JobError> {
///     let db = pass.context::<Db>()?;
///     db.set_display_names(&rows).await?; // an `update .. where`: a page runs at least once
///     Ok(())
/// }
///
/// // elsewhere:
/// FillDisplayName::enqueue(&jobs).await?;   // a completed pass is not run again ...
/// FillDisplayName::force(&jobs).await?;     // ... unless forced
/// ```
///
/// # What it generates
///
/// Next to the unchanged handler: a unit struct, the handle (`fill_display_name` ->
/// `FillDisplayName`, or `handle = ..`), implementing `Job` (input `BackfillRequest`, output
/// `BackfillReport`, idempotency key = the name) and `Backfill`; `enqueue(&jobs)` and
/// `force(&jobs)` (or `enqueue_for(&jobs, tenant)` and `force_for` with `tenant =
/// per_tenant`); `descriptor()` and `backfill()`; and registry entries, so workers run it and
/// the manifest lists it with kind `backfill`.
///
/// The job's body pages through the source: page `n` is the durable step `batch:n` (the pacer's
/// wait, the read, the handler), whose checkpoint is the cursor and the counts, never the rows.
/// A killed pass resumes on the page it stopped at. The pass ends after a page shorter than
/// `batch`.
///
/// # Arguments
///
/// - `name = ".."` (required): the durable key: the job's name, its idempotency key, the
///   ledger's key.
/// - `tenant = none | per_tenant` (required): one pass over every tenant, or one pass per
///   tenant, named when it is enqueued (`pass.tenant()` in the source and the handler).
/// - `source = path` (required): `async fn(Pass, Option<Cursor>, u32) -> Result<Page<Row,
///   Cursor>, E>`; `Cursor` is any serde type (stored in the checkpoint), `Row` anything the
///   handler takes.
/// - `batch = N`: rows per page, default 1,000, at least 1.
/// - `rate = R`: pages per second, default 5, finite and above 0; there is no unthrottled
///   mode. The pacer waits on the run's clock and unwinds on cancellation.
/// - `queue`, `retry(..)`, `timeout` as on `#[job]`; `handle`, `crate`.
///
/// The handler gets no step API: its first parameter is the `Pass` (tenant, app context, page
/// number, cancellation signal), never the `Run`; a page already is one step.
#[proc_macro_attribute]
pub fn backfill(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::pipeline::run::<expand::backfill::Backfill>(args.into(), item.into())
        .unwrap_or_else(expand::fallback::Refused::into_tokens)
        .into()
}

/// Declares a consumer: a durable reader of a cursor-based source (a vendor's cursor, a table
/// by keyset, a stream), and the task that keeps exactly one lap of it running. The handler
/// gets each page's rows as a backfill's does; the job reads `lap` pages a lap (default 100),
/// each a durable step holding the cursor after it, sleeping `poll` (default `"5s"`) while the
/// source has nothing new, and the next lap starts where the last stopped.
///
/// ```ignore
/// #[consumer(name = "orders.feed", source = orders_after, batch = 100)]
/// async fn feed_orders(pass: Pass, orders: Vec<Order>) -> Result<(), JobError> { .. }
/// ```
///
/// Arguments: `name` (required: the job's name and key), `source` (required), `batch`, `lap`,
/// `poll`, `cron` (the supervisor's, default every minute), `tz`, `queue`, `timeout`,
/// `handle` (the supervisor task's is `<handle>Supervisor`).
#[proc_macro_attribute]
pub fn consumer(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::pipeline::run::<expand::consumer::Consumer>(args.into(), item.into())
        .unwrap_or_else(expand::fallback::Refused::into_tokens)
        .into()
}

/// Declares a double-entry ledger: a job whose input is a `Posting`, refused before a line is
/// written unless balanced per currency and well formed, then written in one durable step
/// through a `LedgerBook`.
///
/// It goes on a unit struct, the handle:
///
/// ```ignore
/// #[jobs::ledger(name = "payments", tenant = per_tenant, book = driver)]
/// pub struct PostPayment;
///
/// // in a request handler: refused at once when unbalanced, posted once per key
/// PostPayment::enqueue(&jobs, posting!(payment_id, [
///     "assets:stripe" => (amount) EUR,
///     "income:sales" => (-amount) EUR,
/// ]).for_tenant(org_id)).await?;
/// ```
///
/// # Arguments
///
/// - `name = ".."` (required): the ledger's name (the job's name, the book's ledger column).
/// - `tenant = none | per_tenant` (required): with `per_tenant` every posting names its
///   tenant and keys are unique per tenant.
/// - `book = driver | path` (required): `driver` writes through the driver's own book
///   (Postgres `x_ledger_lines`, or the memory driver's twin); a path names a
///   `fn(&Run) -> Result<Arc<dyn LedgerBook>, JobError>` returning the app's.
/// - `queue`, `retry(..)` as on `#[job]`; `crate`.
///
/// The job's idempotency key is `<name>:<posting key>`. `enqueue` and `enqueue_in` call
/// `assert_balanced_posting` before enqueueing; the run checks again (a raw enqueue, a stored
/// row) and both refusals are terminal.
#[proc_macro_attribute]
pub fn ledger(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::pipeline::run::<expand::ledger::Ledger>(args.into(), item.into())
        .unwrap_or_else(expand::fallback::Refused::into_tokens)
        .into()
}

/// Builds a `Posting` from a literal, checked at compile time.
///
/// ```ignore
/// let p = posting!("pay_123", [
///     "assets:cash"  => 1_000 EUR,
///     "income:sales" => -900 EUR,
///     "income:fees"  => (-fee) EUR,   // a computed amount, in parentheses
/// ]);
/// ```
///
/// Each entry is `account => amount CURRENCY`: an amount is integer minor units (a literal,
/// optionally negative, or a parenthesised expression), never a float; the currency is an ISO
/// 4217 code. At compile time it refuses fewer than two entries, a blank literal account, a
/// code that is not ISO 4217, a literal beyond ±(2^53 - 1), and a currency whose entries are
/// all literals and do not sum to zero (`X_LEDGER_UNBALANCED`). A currency with a computed
/// amount is checked at run time, by `assert_balanced_posting` and by the ledger's run.
#[proc_macro]
pub fn posting(input: TokenStream) -> TokenStream {
    expand::posting::expand(input.into())
        .unwrap_or_else(|errors| {
            // In expression position several `compile_error!`s need a block around them.
            let errors = errors.into_compile_error();
            quote::quote!({ #errors })
        })
        .into()
}

/// Makes a struct or enum a job input: derives `Serialize`, `Deserialize` and `JsonSchema`
/// through the serde and schemars that `jobs` itself depends on, so the crate needs no
/// `serde` or `schemars` dependency of its own (and a different schemars major in the tree
/// does not matter).
///
/// ```ignore
/// use jobs::prelude::*;
///
/// #[input]
/// #[serde(rename_all = "camelCase")] // serde and schemars attributes work as usual
/// pub struct Welcome {
///     pub user_id: u64,
///     /// Doc comments become the schema's descriptions.
///     pub org_id: String,
/// }
/// ```
///
/// `#[derive(Serialize, Deserialize, JsonSchema)]` with the prelude's derives works the same
/// way, in a crate with or without serde and schemars of its own.
#[proc_macro_attribute]
pub fn input(args: TokenStream, item: TokenStream) -> TokenStream {
    input::expand(args.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// The prelude's `Serialize` derive: serde's, through the serde `jobs` depends on, so a crate
/// without a serde dependency of its own can use it (`#[serde(..)]` attributes work as usual).
/// [`macro@input`] derives all three at once.
#[proc_macro_derive(Serialize, attributes(serde))]
pub fn derive_serialize(item: TokenStream) -> TokenStream {
    derive::expand(derive::Derive::Serialize, item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// The prelude's `Deserialize` derive: serde's, through the serde `jobs` depends on (see
/// [`derive@Serialize`]).
#[proc_macro_derive(Deserialize, attributes(serde))]
pub fn derive_deserialize(item: TokenStream) -> TokenStream {
    derive::expand(derive::Derive::Deserialize, item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// The prelude's `JsonSchema` derive: schemars 1's, through the schemars `jobs` depends on,
/// so a crate without schemars of its own (or with another major of it) can use it.
#[proc_macro_derive(JsonSchema, attributes(schemars, serde, validate, garde))]
pub fn derive_json_schema(item: TokenStream) -> TokenStream {
    derive::expand(derive::Derive::JsonSchema, item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

/// Declares a webhook: ONE event delivered to ONE endpoint per job, signed, recorded in the
/// driver's endpoint ledger, retried as any job is. A factory over `#[job]`.
///
/// It goes on the fn that reads one delivery's endpoint (URL and secret) and event from the
/// app's own store, on every attempt: the endpoint is never checkpointed or logged.
///
/// ```ignore
/// use jobs::prelude::*;
/// use jobs::webhook::{WebhookDelivery, WebhookTarget};
///
/// #[webhook(name = "orders.webhook", tenant = none, timeout = "10s", disable_after = 10)]
/// async fn order_webhook(run: &Run, delivery: &WebhookDelivery) -> Result<WebhookTarget, JobError> {
///     let app = run.context::<App>()?;
///     WebhookTarget::found(delivery, app.endpoint(&delivery.endpoint_id), app.event(&delivery.event_id))
/// }
///
/// OrderWebhook::enqueue(&jobs, WebhookDelivery::new("ep_1", "evt_1")).await?;
/// ```
///
/// Arguments: `name` (required: the durable name), `tenant = none | per_tenant` (required;
/// `per_tenant` gives `enqueue_for(&jobs, tenant, delivery)`), `timeout` (one request, below
/// the worker's 25 s drain budget), `disable_after` (consecutive failures, default 10),
/// `max_delay` (the longest `Retry-After` honoured, default 1h), `allow_private` and
/// `development` (default false), `queue`, `retry(..)`, `handle`. `key` is refused: a
/// delivery's key is its endpoint and event ids.
#[proc_macro_attribute]
pub fn webhook(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::pipeline::run::<expand::webhook::Webhook>(args.into(), item.into())
        .unwrap_or_else(expand::fallback::Refused::into_tokens)
        .into()
}

/// Declares a partitions job: a job that keeps the app's range-partitioned Postgres tables
/// ready (one durable step per table: the current period's partition and `ahead` more
/// created, those past `retain` dropped, every DDL statement under a `lock_timeout`), and the
/// cron task that fires it, by default at `17 3 * * *` in UTC.
///
/// ```ignore
/// use jobs::prelude::*;
/// use jobs::partitions::{PartitionedTable, Partitions};
///
/// #[partitions(name = "app.partitions")]      // task `app.partitions.schedule`, 03:17 UTC
/// fn app_partitions(_run: &Run) -> Result<Partitions, JobError> {
///     Ok(Partitions::new().table(PartitionedTable::daily("events").ahead(7).retain(90)))
/// }
/// ```
///
/// Arguments: `name` (required), `cron`, `tz` (default `"UTC"`), `task` (default
/// `<name>.schedule`), `queue`, `timeout`, `handle` (the task's is `<handle>Schedule`). The fn
/// may be `async`; it runs on every attempt. Enqueued with `PartitionsRequest::from(day)`, a
/// run creates every partition back to that day and drops nothing.
#[proc_macro_attribute]
pub fn partitions(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::pipeline::run::<expand::partitions::Partitions>(args.into(), item.into())
        .unwrap_or_else(expand::fallback::Refused::into_tokens)
        .into()
}

/// Declares a purge: a job whose body is one `jobs::purge::Purge` pass over the targets its fn
/// builds (one durable step per target), and the cron task that fires it, by default at
/// `23 * * * *` in UTC.
///
/// ```ignore
/// use jobs::prelude::*;
/// use jobs::purge::Purge;
///
/// #[purge(name = "app.purge")]                // task `app.purge.schedule`, `23 * * * *` UTC
/// fn app_purge(run: &Run) -> Result<Purge, JobError> {
///     Ok(Purge::new().expired_events().target(run.context::<App>()?.sessions()))
/// }
/// ```
///
/// Arguments: `name` (required), `cron`, `tz` (default `"UTC"`), `task` (the task's name,
/// default `<name>.schedule`), `queue`, `timeout`, `handle` (the job's handle; the task's is
/// `<handle>Schedule`). The fn may be `async`; it runs on every attempt, so its targets may
/// hold what the attempt gives them.
#[proc_macro_attribute]
pub fn purge(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::pipeline::run::<expand::purge::Purge>(args.into(), item.into())
        .unwrap_or_else(expand::fallback::Refused::into_tokens)
        .into()
}
