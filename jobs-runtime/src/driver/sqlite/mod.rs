//! The SQLite driver: durable jobs in one file, with no server (feature `sqlite`).
//!
//! One host, one file: the processes of that host share the queue through SQLite's own
//! locking (WAL mode, a busy timeout). SQLite has one writer at a time, so the claim needs no
//! row locks: it reads and writes inside one `BEGIN IMMEDIATE` transaction that no other
//! writer can interleave, and every settling write is fenced on the claim as on Postgres.
//! Timestamps are stored in one fixed-width text form (`time.rs`), ids as 16-byte blobs.
//!
//! Every bound `LIMIT` is written `limit ?N + 0`: SQLite (3.4x and later) reads a bare `limit ?N`
//! as a hint to the planner and marks the statement stale whenever `?N` is bound again, so a
//! cached statement would be parsed and planned anew on every execution.
//!
//! A write that commits on its own is stepped to its end (`execute`, `fetch_all`), never left
//! after its first row (`fetch_optional`, `fetch_one`): SQLite runs its auto-checkpoint when a
//! statement's step finishes it, and a statement that is reset early commits without one. A
//! process that only enqueued with `insert ... returning` read by `fetch_optional` grew its WAL
//! without bound (53 MB after 2,000 jobs, with every frame already copied to the database).
//!
//! ```no_run
//! # async fn demo() -> Result<(), jobs::JobError> {
//! use jobs::{driver::SqliteDriver, Jobs};
//!
//! let driver = SqliteDriver::connect("sqlite://jobs.db").await?;
//! driver.migrate().await?;
//! let jobs = Jobs::new(driver);
//! # Ok(()) }
//! ```

mod backfill;
mod caller_tx;
mod claim;
mod classify;
mod connect;
mod dependencies;
mod enqueue;
mod events;
mod groups;
mod introspect;
mod lease;
mod ledger_book;
mod migrate;
mod outbox;
mod purge;
mod reads;
mod scheduler;
mod settle;
mod steps;
mod time;
mod wake;
mod webhook_ledger;
mod writer;

pub use connect::{DEFAULT_BUSY_TIMEOUT, JOURNAL_SIZE_LIMIT};
pub use ledger_book::SqliteBook;
pub use migrate::{SqliteMigration, SQLITE_MIGRATIONS};
pub use outbox::SqliteOutbox;

use async_trait::async_trait;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqlitePool};

use self::classify::Op;
use self::writer::Writer;
use super::records::*;
use super::{JobDriver, WakeReceiver};
use crate::driver::{
    EventFindParams, JobCancelParams, JobGetParams, QueueStatsParams, StepListParams, StepPutParams,
};
use crate::error::JobError;

/// The job columns every read returns (never `*`), as a literal for `concat!`, so every
/// statement is a `&'static str`.
macro_rules! job_columns {
    () => {
        "id, run_id, name, queue, input, idempotency_key, tenant_id, state, attempt, \
         max_attempts, run_at, priority, created_at, updated_at, last_error, last_error_code, \
         claimed_by, claims, visible_at, progress, traceparent, actor, unique_until, result"
    };
}
pub(crate) use job_columns;

/// The SQLite [`JobDriver`].
#[derive(Debug, Clone)]
pub struct SqliteDriver {
    /// One connection: every write of the driver goes through it, in turn.
    writer: Writer,
    /// Connections that only read (the writer's own, for an in-memory database).
    reader: SqlitePool,
    /// One connection for callers' own transactions ([`SqliteDriver::pool`]).
    caller: SqlitePool,
}

impl SqliteDriver {
    /// Opens (creating it when missing) the database at `url` (`sqlite://path/to/jobs.db`,
    /// `sqlite:jobs.db`, `sqlite::memory:`), in WAL mode with a busy timeout of
    /// [`DEFAULT_BUSY_TIMEOUT`]. Call [`SqliteDriver::migrate`] before the first job.
    ///
    /// A malformed URL, or a file that cannot be opened or created (a missing directory, no
    /// permission, not a database), is `X_DRIVER_URL_INVALID`, terminal.
    pub async fn connect(url: &str) -> Result<Self, JobError> {
        Self::connect_with(connect::options(url)?).await
    }

    /// [`SqliteDriver::connect`] on options of your own; the driver still sets WAL mode, the
    /// busy timeout and `create_if_missing`.
    pub async fn connect_with(options: SqliteConnectOptions) -> Result<Self, JobError> {
        let pools = connect::pools(connect::tune(options)).await?;
        Ok(SqliteDriver {
            writer: pools.writer,
            reader: pools.reader,
            caller: pools.caller,
        })
    }

    /// A pool of one connection to the driver's database, for transactions of your own: one on
    /// it, or on any connection to the same file, can enqueue with
    /// [`SqliteDriver::enqueue_in`]. The driver writes through a connection of its own, so a
    /// long transaction here holds the driver's writes back (SQLite has one writer at a time)
    /// up to the busy timeout. For an in-memory database this is the driver's one connection.
    pub fn pool(&self) -> &SqlitePool {
        &self.caller
    }

    /// The driver's own writing connection, once the writes queued before this call are done;
    /// the driver's writes wait while you hold it. For what must live on the connection that
    /// writes (temporary triggers, a loaded extension), or a transaction of yours that takes its
    /// turn with the driver's writes in this process rather than in SQLite's busy handler.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use jobs::sqlx::{self, Connection};
    ///
    /// let driver = jobs::driver::SqliteDriver::connect("sqlite://jobs.db").await?;
    /// let mut writer = driver.writer().await?;
    /// let mut tx = writer.begin().await?;
    /// sqlx::query("insert into orders (id) values (1)").execute(&mut *tx).await?;
    /// // ... jobs.enqueue_in::<ShipOrder>(&mut tx, input) ...
    /// tx.commit().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// `X_DRIVER_UNAVAILABLE` after [`SqliteDriver::close`].
    pub async fn writer(
        &self,
    ) -> Result<impl std::ops::DerefMut<Target = SqliteConnection> + Send, JobError> {
        self.writer.acquire(Op::Writer).await
    }

    /// Closes the driver's connections, after the writes already under way; every clone of
    /// this driver is closed with it. Dropping the last clone closes them too, but without
    /// waiting.
    pub async fn close(&self) {
        self.writer.close().await;
        self.caller.close().await;
        self.reader.close().await;
    }

    /// Creates or upgrades the tables; idempotent, safe from several processes at once.
    /// Answers the versions it applied.
    pub async fn migrate(&self) -> Result<Vec<i32>, JobError> {
        migrate::migrate(&self.writer).await
    }

    /// Enqueues on the caller's connection or transaction: the job exists if and only if that
    /// transaction commits.
    pub async fn enqueue_in(
        &self,
        conn: &mut SqliteConnection,
        request: &EnqueueRequest,
    ) -> Result<EnqueueResult, JobError> {
        enqueue::enqueue_on(conn, request, request.now).await
    }

    /// Publishes an event on the caller's connection or transaction: it is seen, and wakes the
    /// parked runs, only if that transaction commits.
    pub async fn event_publish_in(
        &self,
        conn: &mut SqliteConnection,
        event: &EventPublish,
    ) -> Result<EventId, JobError> {
        events::publish_on(conn, event).await
    }
}

#[async_trait]
impl JobDriver for SqliteDriver {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    fn lease_store(&self) -> Option<&dyn crate::driver::lease::LeaseStore> {
        Some(self)
    }

    fn scheduler_store(&self) -> Option<&dyn crate::driver::SchedulerStore> {
        Some(self)
    }

    fn backfill_store(&self) -> Option<&dyn crate::driver::BackfillStore> {
        Some(self)
    }

    fn ledger_book(&self) -> Option<&dyn crate::driver::LedgerBook> {
        Some(self)
    }

    fn webhook_ledger(&self) -> Option<&dyn crate::driver::WebhookLedger> {
        Some(self)
    }

    fn caller_transaction(&self) -> Option<&dyn crate::driver::CallerTransaction> {
        Some(self)
    }

    fn introspect(&self) -> Option<&dyn crate::driver::introspect::JobIntrospection> {
        Some(self)
    }

    async fn migrate(&self) -> Result<Vec<i32>, JobError> {
        SqliteDriver::migrate(self).await
    }

    async fn store_check(&self) -> Result<crate::driver::StoreCheck, JobError> {
        migrate::store_check(&self.reader).await
    }

    async fn job_enqueue(&self, request: &EnqueueRequest) -> Result<EnqueueResult, JobError> {
        if let Some(dependencies) = &request.dependencies {
            return dependencies::enqueue_dependent(&self.writer, request, dependencies).await;
        }
        let mut conn = self.writer.acquire(Op::JobEnqueue).await?;
        enqueue::enqueue_on(&mut conn, request, request.now).await
    }

    async fn job_enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        enqueue::enqueue_many(&self.writer, requests).await
    }

    async fn job_claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
        let result = claim::claim(&self.writer, params).await;
        // A burial ends a job: its dependents, if any, follow it (burials are rare).
        if result.as_ref().is_ok_and(|r| !r.exhausted.is_empty()) {
            dependencies::release_after(&self.writer, params.now).await;
        }
        result
    }

    async fn job_ack(&self, params: &AckParams) -> Result<bool, JobError> {
        settle::ack(&self.writer, params).await
    }

    async fn job_ack_many(&self, params: &[AckParams]) -> Result<Vec<bool>, JobError> {
        settle::ack_many(&self.writer, params).await
    }

    async fn job_nack(&self, params: &NackParams) -> Result<bool, JobError> {
        settle::nack(&self.writer, params).await
    }

    async fn job_purge(&self, params: &JobPurgeParams) -> Result<u64, JobError> {
        purge::purge(&self.writer, params).await
    }

    async fn job_heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError> {
        settle::heartbeat(&self.writer, params).await
    }

    async fn job_progress(&self, params: &ProgressParams) -> Result<bool, JobError> {
        settle::progress(&self.writer, params).await
    }

    async fn job_get(&self, params: &JobGetParams) -> Result<Option<JobRecord>, JobError> {
        reads::get(&self.reader, params.id).await
    }

    async fn job_links(&self, id: JobId) -> Result<JobLinks, JobError> {
        dependencies::links(&self.reader, id).await
    }

    async fn job_release_pending(&self, now: crate::clock::Timestamp) -> Result<(), JobError> {
        dependencies::release_pending(&self.writer, now).await
    }

    async fn job_cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError> {
        let cancelled = settle::cancel(&self.writer, params).await?;
        // Its dependents, if any, follow it (a cancel is rare: no flag is read first).
        dependencies::release_after(&self.writer, params.now).await;
        Ok(cancelled)
    }

    async fn job_group_join(&self, params: &GroupJoinParams<'_>) -> Result<GroupRecord, JobError> {
        groups::join(&self.writer, params).await
    }

    async fn job_group_get(&self, group: GroupId) -> Result<Option<GroupRecord>, JobError> {
        groups::get(&self.reader, group).await
    }

    async fn job_group_members(
        &self,
        params: &GroupMembersParams,
    ) -> Result<Vec<GroupMember>, JobError> {
        groups::members(&self.reader, params).await
    }

    async fn job_group_wake(
        &self,
        params: &GroupWakeParams,
    ) -> Result<Option<GroupRecord>, JobError> {
        groups::wake(&self.writer, &self.reader, params).await
    }

    async fn queue_stats(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        reads::queue_stats(&self.reader, params.now).await
    }

    async fn queue_next_due(&self, params: &NextDueParams) -> Result<Vec<QueueDue>, JobError> {
        reads::next_due(&self.reader, params).await
    }

    async fn step_list(&self, params: &StepListParams) -> Result<Vec<StepRecord>, JobError> {
        steps::list(&self.reader, params.run_id).await
    }

    async fn step_put(&self, params: &StepPutParams<'_>) -> Result<bool, JobError> {
        steps::put(&self.writer, params).await
    }

    async fn event_publish(&self, event: &EventPublish) -> Result<EventId, JobError> {
        let mut conn = self.writer.acquire(Op::EventPublish).await?;
        events::publish_on(&mut conn, event).await
    }

    async fn event_purge(&self, params: &EventPurgeParams) -> Result<u64, JobError> {
        events::purge(&self.writer, params).await
    }

    async fn event_mark(&self) -> Result<String, JobError> {
        events::mark(&self.reader).await
    }

    async fn event_find(&self, params: &EventFindParams<'_>) -> Result<Option<JobEvent>, JobError> {
        events::find(&self.reader, params).await
    }

    async fn wake_listen(&self) -> Result<Option<WakeReceiver>, JobError> {
        wake::listen(&self.reader).await.map(Some)
    }
}
