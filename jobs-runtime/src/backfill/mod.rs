//! `#[backfill]`: a declared, throttled, resumable pass over existing rows.
//!
//! A backfill is two functions: a **keyset source** that reads the page after a cursor (one
//! statement per page, `where id > $1 order by id limit $2`, never `OFFSET`), and a **per-page
//! handler** that gets the page's rows and the pass (tenant, app context, cancellation signal),
//! but no step API. `#[backfill]` on the handler turns the pair into a real job: registered,
//! in the manifest with kind `backfill`, retried, cancellable and dead-lettered like any other.
//!
//! ```
//! use jobs::prelude::*;
//! use jobs::backfill::{Page, Pass};
//!
//! #[derive(Clone)]
//! struct User { id: i64 }
//!
//! /// Keyset: the page after `after`, in `id` order.
//! async fn users_after(pass: Pass, after: Option<i64>, limit: u32) -> Result<Page<User, i64>, JobError> {
//!     let from = after.unwrap_or(0);
//!     let rows: Vec<User> = (from + 1..=from + i64::from(limit)).take_while(|id| *id <= 2_500).map(|id| User { id }).collect();
//!     Ok(Page::keyed(rows, |user| user.id))
//! }
//!
//! #[backfill(name = "users.display-name", tenant = none, source = users_after, batch = 1000, rate = 5.0)]
//! async fn fill_display_name(pass: Pass, rows: Vec<User>) -> Result<(), JobError> {
//!     // write with upserts or `update .. where`, never `count + 1`: a page runs at least once
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let kit = jobs::testing::TestKit::new();
//! let queued = FillDisplayName::enqueue(kit.jobs()).await.unwrap();
//! kit.run_to_completion().await;
//! assert_eq!(kit.job(queued.id).await.state, JobState::Done);
//! # }
//! ```
//!
//! # Pages are durable steps
//!
//! Page `n` runs inside the step `batch:n`: the pacer's wait, the source's read and the
//! handler, in that order. The step's output is a [`Checkpoint`] (the cursor after the page and
//! the running counts, never the rows), so a killed pass resumes on the page it stopped at:
//! completed pages replay from their checkpoints without reading, handling or waiting again.
//! The pass ends after a page shorter than `batch` (or one whose source answered no cursor).
//!
//! # Pacing
//!
//! `rate` is pages per second (default 5: 5,000 rows/s at the default `batch` of 1,000). There
//! is no unthrottled mode; a fast sweep is a high rate. The pacer waits on the run's clock:
//! under a [`TestClock`](crate::clock::TestClock) the wait advances the clock instead of
//! sleeping, so a test sweep finishes at once and the clock shows what the throttle cost. The
//! wait unwinds on cancellation with `X_ABORTED`.
//!
//! # The ledger of passes
//!
//! Each pass writes one row to the driver's [`BackfillStore`](crate::driver::BackfillStore)
//! (a Postgres table, `x_backfills`, and its memory twin): status, pages and rows processed, the
//! last cursor, the declaration's checksum, when it started and finished. A completed pass is
//! not run again: enqueueing after completion runs a job that reports `skipped` with the
//! completed pass's run id. [`BackfillRequest::force`] writes a new row and runs anyway.
//! [`Backfills::pending`](crate::backfill::Backfills::pending) compares the declarations with
//! the ledger: the *pending* ones (never run, or last failed) and the *orphaned* ledger names
//! no declaration carries any more.

mod pacer;
mod pass;
mod report;
mod requests;

pub use pacer::Pacer;
pub(crate) use pass::ends_for_good;
pub use pass::run_backfill;
pub use report::{pending_backfills, BackfillState, PendingBackfill, PendingReport};
pub use requests::{Backfills, PendingEnqueue};

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::driver::RunId;
use crate::error::JobError;
use crate::job::Job;
use crate::run::Run;

pub use crate::driver::backfill_store::{BackfillPass, PassStatus};

/// Rows per page unless declared (`batch = ..`).
pub const DEFAULT_BACKFILL_BATCH: u32 = 1_000;
/// Pages per second unless declared (`rate = ..`).
pub const DEFAULT_BACKFILL_RATE: f64 = 5.0;

/// Who a pass is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackfillTenant {
    /// `tenant = none`: one pass sweeps every tenant.
    None,
    /// `tenant = per_tenant`: each pass is scoped to one tenant, named when it is enqueued.
    PerTenant,
}

impl BackfillTenant {
    /// The spelling in the declaration and the manifest.
    pub const fn as_str(self) -> &'static str {
        match self {
            BackfillTenant::None => "none",
            BackfillTenant::PerTenant => "per_tenant",
        }
    }
}

/// A backfill's declaration, as the manifest shows it.
#[derive(Debug, Clone, Copy)]
pub struct BackfillDescriptor {
    /// The durable name: the job's name, its idempotency key and the ledger's key.
    pub name: &'static str,
    /// Who a pass is for.
    pub tenant: BackfillTenant,
    /// Rows per page (at least 1).
    pub batch: u32,
    /// Pages per second (finite, above 0).
    pub rate: f64,
    /// The source fn, as written.
    pub source: &'static str,
    /// The row type, as written.
    pub row_type: &'static str,
    /// A hash of the declaration (handler tokens, source path, name); not of `batch` or `rate`.
    pub checksum: &'static str,
    /// `requires = "<migration>"`: the app migration (its sqlx version, then an optional
    /// `_description`) the operator's gate finds applied before it enqueues a pass
    /// (`X_BACKFILL_MIGRATION_PENDING`).
    pub requires: Option<&'static str>,
    /// `environments = [..]`: the deployment environments a pass runs in; empty: every one.
    /// Elsewhere the pass and the gate refuse with `X_BACKFILL_ENVIRONMENT`, and the pending
    /// report shows it `excluded`.
    pub environments: &'static [&'static str],
    /// `count = <fn>` is declared: after the last page the pass counts the rows still to do,
    /// and above zero fails with `X_BACKFILL_STALLED`.
    pub counts: bool,
}

impl BackfillDescriptor {
    /// A declaration with the defaults (`batch` 1,000, `rate` 5).
    pub const fn new(
        name: &'static str,
        tenant: BackfillTenant,
        source: &'static str,
        row_type: &'static str,
        checksum: &'static str,
    ) -> Self {
        BackfillDescriptor {
            name,
            tenant,
            batch: DEFAULT_BACKFILL_BATCH,
            rate: DEFAULT_BACKFILL_RATE,
            source,
            row_type,
            checksum,
            requires: None,
            environments: &[],
            counts: false,
        }
    }

    /// The version of the migration `requires` names: its leading digits (`"20261201093000"`
    /// of `"20261201093000_add_display_name"`).
    pub fn required_version(&self) -> Option<i64> {
        let id = self.requires?;
        let digits: &str = &id[..id.find(|c: char| !c.is_ascii_digit()).unwrap_or(id.len())];
        digits.parse().ok()
    }

    /// Whether a pass runs in `environment` (every environment when none is declared; an
    /// unnamed environment runs none of a declaration that names some).
    pub fn runs_in(&self, environment: Option<&str>) -> bool {
        self.environments.is_empty()
            || environment.is_some_and(|env| self.environments.contains(&env))
    }
}

/// A declared backfill. `#[backfill]` implements it (and [`Job`]) on the handle.
pub trait Backfill: Job<Input = BackfillRequest, Output = BackfillReport> {
    /// The declaration.
    const BACKFILL: BackfillDescriptor;

    /// Reads the page after `after` (the stored cursor, as JSON) and hands its rows to the
    /// handler. Generated: it joins the declared source and handler.
    fn page(
        pass: Pass,
        after: Option<serde_json::Value>,
        limit: u32,
    ) -> BoxFuture<'static, Result<PageDone, JobError>>;

    /// The rows still to do, by the declared `count` fn; `None` when none is declared.
    /// Generated.
    fn count(pass: Pass) -> Option<BoxFuture<'static, Result<i64, JobError>>> {
        let _ = pass;
        None
    }
}

/// What a pass is enqueued with: its tenant (for `tenant = per_tenant`) and whether to run
/// past a completed pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BackfillRequest {
    /// The tenant of a `per_tenant` pass; `None` for `tenant = none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Run even though a completed pass exists (writes a new ledger row).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
}

impl BackfillRequest {
    /// A pass over every tenant.
    pub fn new() -> Self {
        Self::default()
    }

    /// A pass scoped to `tenant`.
    pub fn tenant(tenant: impl Into<String>) -> Self {
        BackfillRequest {
            tenant: Some(tenant.into()),
            force: false,
        }
    }

    /// Runs past a completed pass.
    pub fn forced(mut self) -> Self {
        self.force = true;
        self
    }
}

/// What a pass reports (the job's output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackfillReport {
    /// The backfill's name.
    pub name: String,
    /// Pages processed.
    pub batches: u64,
    /// Rows processed.
    pub rows: u64,
    /// `true`: a completed pass existed and this run was not forced; nothing ran.
    pub skipped: bool,
    /// The run that completed the earlier pass, when skipped.
    pub previous_run_id: Option<RunId>,
}

/// One page from a keyset source: its rows, and the cursor after the last one.
#[derive(Debug, Clone)]
pub struct Page<R, C> {
    /// The rows, in cursor order.
    pub rows: Vec<R>,
    /// The cursor after the last row; `None` ends the pass after this page.
    pub next: Option<C>,
}

impl<R, C> Page<R, C> {
    /// A page whose cursor is the key of its last row: `Page::keyed(rows, |user| user.id)`.
    pub fn keyed(rows: Vec<R>, key: impl Fn(&R) -> C) -> Self {
        let next = rows.last().map(key);
        Page { rows, next }
    }

    /// A page with an explicit cursor.
    pub fn new(rows: Vec<R>, next: Option<C>) -> Self {
        Page { rows, next }
    }

    /// The empty last page.
    pub fn end() -> Self {
        Page {
            rows: Vec::new(),
            next: None,
        }
    }
}

/// What one page did: how many rows it handled and the cursor after it.
#[derive(Debug, Clone, PartialEq)]
pub struct PageDone {
    /// Rows handled.
    pub rows: u64,
    /// The cursor after the page, as JSON (`None`: the source is exhausted).
    pub next: Option<serde_json::Value>,
}

/// The durable output of the step `batch:n`: the cursor after page `n` and the running counts.
/// Never the rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The cursor after the page.
    pub cursor: Option<serde_json::Value>,
    /// Pages processed, this one included.
    pub batches: u64,
    /// Rows processed, this page's included.
    pub rows: u64,
    /// Whether this was the last page.
    pub done: bool,
}

/// One backfill pass, as its source and handler see it: the tenant, the app context, the page
/// number and the cancellation signal. There is no step API: a page is already one step.
#[derive(Clone, Debug)]
pub struct Pass {
    run: Run,
    name: &'static str,
    page: u64,
}

impl Pass {
    pub(crate) fn new(run: Run, name: &'static str, page: u64) -> Self {
        Pass { run, name, page }
    }

    /// The backfill's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The page being read or handled, from 0.
    pub fn page(&self) -> u64 {
        self.page
    }

    /// The pass's tenant (`None` for `tenant = none`): scope every read and write to it.
    pub fn tenant(&self) -> Option<&str> {
        self.run.tenant()
    }

    /// The run, stable across attempts.
    pub fn run_id(&self) -> RunId {
        self.run.run_id()
    }

    /// The pass's job row.
    pub fn job_id(&self) -> crate::driver::JobId {
        self.run.job_id()
    }

    /// The app context the worker was given (`WorkerBuilder::context`): a pool, a client.
    pub fn context<T: Send + Sync + 'static>(&self) -> Result<std::sync::Arc<T>, JobError> {
        self.run.context::<T>()
    }

    /// Whether the pass was cancelled (timeout, lost lease, drain, operator cancel).
    pub fn is_cancelled(&self) -> bool {
        self.run.is_cancelled()
    }

    /// Resolves when the pass is cancelled; a long page should `select!` on it.
    pub async fn cancelled(&self) {
        self.run.cancelled().await
    }
}

/// Not public API: joins a declared source and handler into one page. The row type links them,
/// so a handler whose rows are not the source's is a type error.
#[doc(hidden)]
pub async fn join_page<S, SFut, H, HFut, R, C, E1, E2>(
    pass: Pass,
    after: Option<serde_json::Value>,
    limit: u32,
    source: S,
    handle: H,
) -> Result<PageDone, JobError>
where
    S: FnOnce(Pass, Option<C>, u32) -> SFut,
    SFut: std::future::Future<Output = Result<Page<R, C>, E1>>,
    H: FnOnce(Pass, Vec<R>) -> HFut,
    HFut: std::future::Future<Output = Result<(), E2>>,
    C: Serialize + DeserializeOwned,
    E1: Into<JobError>,
    E2: Into<JobError>,
{
    let name = pass.name();
    let after: Option<C> = after
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| {
            JobError::new(
                crate::error::ErrorCode::StepRecordInvalid,
                format!(
                    "the stored cursor of backfill `{name}` no longer parses as the source's cursor: {}",
                    crate::error::redact_serde(&e)
                ),
            )
        })?;
    let page = source(pass.clone(), after, limit)
        .await
        .map_err(Into::into)?;
    let rows = page.rows.len() as u64;
    let next = page
        .next
        .map(|c| serde_json::to_value(c))
        .transpose()
        .map_err(|_| {
            JobError::new(
                crate::error::ErrorCode::StepOutputUnserializable,
                format!("the cursor of backfill `{name}` does not serialize to JSON"),
            )
        })?;
    if rows > 0 {
        handle(pass, page.rows).await.map_err(Into::into)?;
    }
    Ok(PageDone { rows, next })
}

/// Not public API: runs a declared `count` fn, its error made a [`JobError`].
#[doc(hidden)]
pub async fn join_count<F, Fut, E>(pass: Pass, count: F) -> Result<i64, JobError>
where
    F: FnOnce(Pass) -> Fut,
    Fut: std::future::Future<Output = Result<i64, E>>,
    E: Into<JobError>,
{
    count(pass).await.map_err(Into::into)
}

/// One declared backfill, for the registry, the manifest and the pending report.
/// `#[backfill]` submits `BackfillEntry::of::<Handle>()`.
#[derive(Clone, Copy)]
pub struct BackfillEntry {
    descriptor: BackfillDescriptor,
    enqueue: fn(&crate::Jobs, BackfillRequest) -> BoxFuture<'_, Result<crate::Enqueued, JobError>>,
}

inventory::collect!(BackfillEntry);

impl std::fmt::Debug for BackfillEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackfillEntry")
            .field("name", &self.descriptor.name)
            .finish()
    }
}

impl BackfillEntry {
    /// The entry for backfill `B`.
    pub const fn of<B: Backfill>() -> Self {
        BackfillEntry {
            descriptor: B::BACKFILL,
            enqueue: enqueue_erased::<B>,
        }
    }

    /// The declaration.
    pub fn descriptor(&self) -> &BackfillDescriptor {
        &self.descriptor
    }

    pub(crate) fn enqueue<'a>(
        &self,
        jobs: &'a crate::Jobs,
        request: BackfillRequest,
    ) -> BoxFuture<'a, Result<crate::Enqueued, JobError>> {
        (self.enqueue)(jobs, request)
    }
}

fn enqueue_erased<B: Backfill>(
    jobs: &crate::Jobs,
    request: BackfillRequest,
) -> BoxFuture<'_, Result<crate::Enqueued, JobError>> {
    // An operator's act, not an app's write: direct, past a required outbox.
    Box::pin(jobs.enqueue_with::<B>(request, crate::EnqueueOptions::new().direct()))
}

/// Every `#[backfill]` linked into this binary, sorted by name.
pub fn registered_backfills() -> Vec<&'static BackfillEntry> {
    let mut all: Vec<_> = inventory::iter::<BackfillEntry>.into_iter().collect();
    all.sort_by_key(|e| e.descriptor.name);
    all.dedup_by_key(|e| e.descriptor.name);
    all
}

/// The backfill declared under `name`.
pub fn registered_backfill(name: &str) -> Option<&'static BackfillEntry> {
    inventory::iter::<BackfillEntry>
        .into_iter()
        .find(|e| e.descriptor.name == name)
}

/// The manifest's fields of a backfill job (its `kind` and `backfill` object), when `name` is one.
pub(crate) fn manifest_fields(name: &str) -> Option<serde_json::Value> {
    let d = registered_backfill(name)?.descriptor;
    Some(serde_json::json!({
        "tenant": d.tenant.as_str(),
        "batch": d.batch,
        "rate": d.rate,
        "source": d.source,
        "row": d.row_type,
        "checksum": d.checksum,
        "requires": d.requires,
        "environments": d.environments,
        "counts": d.counts,
    }))
}
