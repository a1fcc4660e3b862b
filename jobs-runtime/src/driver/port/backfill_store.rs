//! The ledger of backfill passes: an optional sub-port of [`JobDriver`](super::JobDriver), like
//! the lease store. A driver that has one answers
//! [`JobDriver::backfill_store`](super::JobDriver::backfill_store).
//!
//! One row per **pass** (one run of a `#[backfill]`): its name and tenant, the definition's
//! checksum, its status, how many pages and rows it has processed, the last cursor, and when it
//! started and finished. The row is a report, never a resume source: a killed pass resumes
//! from its own durable steps. Only a `completed` row blocks a new pass of the same name and
//! tenant, unless the pass is forced, which writes a new row. A retry adopts its own row.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::records::{JobId, RunId};
use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

/// How many rows [`BackfillStore::backfill_list`] answers unless told otherwise.
pub const DEFAULT_BACKFILL_LIST_LIMIT: u32 = 100;

/// Where a pass stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PassStatus {
    /// Started, not finished (or its worker died and a retry has not adopted it yet).
    Running,
    /// Every page was processed.
    Completed,
    /// The run failed for good.
    Failed,
}

impl PassStatus {
    /// The status as stored and shown.
    pub const fn as_str(self) -> &'static str {
        match self {
            PassStatus::Running => "running",
            PassStatus::Completed => "completed",
            PassStatus::Failed => "failed",
        }
    }

    /// Reads a stored status back.
    pub fn parse(text: &str) -> Result<PassStatus, JobError> {
        match text {
            "running" => Ok(PassStatus::Running),
            "completed" => Ok(PassStatus::Completed),
            "failed" => Ok(PassStatus::Failed),
            other => Err(JobError::new(
                ErrorCode::JobRowStatusUnknown,
                format!(
                    "a backfill pass carries the status `{other}`, which this build does not know"
                ),
            )),
        }
    }
}

/// One pass, as the ledger stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackfillPass {
    /// The pass's own id.
    pub id: uuid::Uuid,
    /// The backfill's declared name.
    pub name: String,
    /// The tenant the pass is scoped to (`None`: every tenant).
    pub tenant: Option<String>,
    /// The run that owns the pass (one pass per run).
    pub run_id: RunId,
    /// The job row of that run.
    pub job_id: JobId,
    /// The checksum of the declaration when the pass began (not of `batch` or `rate`).
    pub checksum: String,
    /// Where it stands.
    pub status: PassStatus,
    /// Whether it was forced past a completed pass.
    pub forced: bool,
    /// Pages processed.
    pub batches: u64,
    /// Rows processed.
    pub rows: u64,
    /// The cursor after the last processed page (the source's own JSON; never a row).
    pub last_cursor: Option<serde_json::Value>,
    /// When the pass began (a retry keeps it).
    pub started_at: Timestamp,
    /// When the row last changed.
    pub updated_at: Timestamp,
    /// When it completed or failed.
    pub finished_at: Option<Timestamp>,
}

/// Begin (or adopt) a pass.
#[derive(Debug, Clone)]
pub struct BackfillBeginParams {
    /// A fresh id for the row, used only when one is inserted.
    pub id: uuid::Uuid,
    /// The backfill's name.
    pub name: String,
    /// The pass's tenant.
    pub tenant: Option<String>,
    /// The run.
    pub run_id: RunId,
    /// The job.
    pub job_id: JobId,
    /// The declaration's checksum.
    pub checksum: String,
    /// Run even when a completed pass exists (a new row).
    pub force: bool,
    /// Now.
    pub now: Timestamp,
}

/// What [`BackfillStore::backfill_begin`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackfillBegin {
    /// The pass runs under its row (inserted now, or adopted: this run's own row from an
    /// earlier attempt). `previous_checksum` is the newest completed pass's checksum, if any.
    Started {
        /// Whether the row existed (a retry, or a resume after a crash).
        adopted: bool,
        /// The newest completed pass's checksum (to warn when the definition moved).
        previous_checksum: Option<String>,
    },
    /// A completed pass exists and the pass is not forced: nothing is written.
    Skipped {
        /// The run that completed it.
        previous_run_id: RunId,
    },
}

/// Record a processed page (never a replayed one).
#[derive(Debug, Clone)]
pub struct BackfillProgressParams {
    /// The run owning the pass.
    pub run_id: RunId,
    /// Pages processed so far.
    pub batches: u64,
    /// Rows processed so far.
    pub rows: u64,
    /// The cursor after the last page.
    pub last_cursor: Option<serde_json::Value>,
    /// Now.
    pub now: Timestamp,
}

/// Settle a pass.
#[derive(Debug, Clone)]
pub struct BackfillFinishParams {
    /// The run owning the pass.
    pub run_id: RunId,
    /// `Completed` or `Failed`.
    pub status: PassStatus,
    /// Pages processed.
    pub batches: u64,
    /// Rows processed.
    pub rows: u64,
    /// The cursor after the last page.
    pub last_cursor: Option<serde_json::Value>,
    /// Now.
    pub now: Timestamp,
}

/// Filter the passes; newest first.
#[derive(Debug, Clone, Default)]
pub struct BackfillListParams {
    /// Only this backfill.
    pub name: Option<String>,
    /// Only passes in this status.
    pub status: Option<PassStatus>,
    /// Only the pass of this run.
    pub run_id: Option<RunId>,
    /// At most this many ([`DEFAULT_BACKFILL_LIST_LIMIT`] when `None`).
    pub limit: Option<u32>,
}

/// The ledger of backfill passes.
#[async_trait]
pub trait BackfillStore: Send + Sync {
    /// Adopts the run's own row, or answers the newest completed pass of the name and tenant
    /// (unless forced), or inserts a `running` row: atomically.
    async fn backfill_begin(&self, params: &BackfillBeginParams)
        -> Result<BackfillBegin, JobError>;

    /// Records the counts and cursor after a processed page.
    async fn backfill_progress(&self, params: &BackfillProgressParams) -> Result<(), JobError>;

    /// Settles the pass `completed` or `failed`.
    async fn backfill_finish(&self, params: &BackfillFinishParams) -> Result<(), JobError>;

    /// The passes matching the filter, newest first.
    async fn backfill_list(
        &self,
        params: &BackfillListParams,
    ) -> Result<Vec<BackfillPass>, JobError>;

    /// Whether the app's migration `version` is applied, as the store's database records it:
    /// a successful row of sqlx's `_sqlx_migrations` (found on the search path) on Postgres and
    /// SQLite; [`APPLIED_MIGRATIONS_KEY`]'s set on Redis; what was recorded with
    /// `MemoryDriver::record_migration` on memory. No such record: `false`. The gate of a
    /// backfill declaring `requires` asks it (`X_BACKFILL_MIGRATION_PENDING`).
    async fn backfill_migration_applied(&self, version: i64) -> Result<bool, JobError>;
}

/// The prefix of the ledger names under which consumers record their laps
/// (`consumer:<name>`): the backfills' pending report leaves them out.
pub const CONSUMER_LEDGER_PREFIX: &str = "consumer:";

/// The Redis set an app on Redis adds its applied migration versions to (`SADD
/// {<prefix>:migrations} 20261201093000`, the driver's key prefix in the braces), for
/// [`BackfillStore::backfill_migration_applied`].
pub const APPLIED_MIGRATIONS_KEY: &str = "migrations";
