//! The Postgres driver: the engine a fleet of workers shares.
//!
//! Every port method is a short adapter: bind the params, run the named statement from
//! `sql/`, classify the error, decode the row. Statements run on a pool or, for
//! [`PostgresDriver::enqueue_in`], on the caller's own transaction: the job then exists if and
//! only if that transaction commits.
//!
//! ```no_run
//! # async fn demo() -> Result<(), jobs::JobError> {
//! use jobs::{driver::PostgresDriver, Jobs};
//!
//! let driver = PostgresDriver::connect("postgres://postgres@127.0.0.1/app").await?;
//! driver.migrate().await?;
//! let jobs = Jobs::new(driver);
//! # Ok(()) }
//! ```

mod announce;
mod backfill;
mod caller_tx;
mod claim;
mod classify;
mod connect;
mod dependencies;
mod enqueue;
mod events;
mod floors;
mod groups;
mod introspect;
mod lease;
mod ledger_book;
mod migrate;
mod nodelay;
mod outbox;
mod partitions;
mod pinned;
mod pooled;
mod purge;
mod reads;
mod rows;
mod scheduler;
mod settle;
mod sql;
mod steps;
mod wake;
mod webhook_ledger;

pub use connect::DEFAULT_CONNECT_TIMEOUT;
pub use ledger_book::PostgresBook;
pub use migrate::{Migration, MIGRATIONS};
pub use outbox::PostgresOutbox;
pub use partitions::PgPartitions;
pub use pinned::REPLAN_EVERY;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};

use self::classify::{classify, Op};
use self::sql::Statements;
use super::records::*;
use super::{JobDriver, WakeReceiver};
use crate::driver::{
    EventFindParams, JobCancelParams, JobGetParams, QueueStatsParams, StepListParams, StepPutParams,
};
use crate::error::JobError;

/// The schema the driver uses unless told otherwise.
pub const DEFAULT_SCHEMA: &str = "public";

/// The session settings [`PostgresDriver::connect`] gives its pool.
///
/// - `jit = off`: the queue's statements are short, and a JIT compile costs more than it saves
///   (a 1,000-row `enqueue_many` took 90 ms compiled against 31 ms interpreted).
/// - `plan_cache_mode = force_generic_plan`: every statement is prepared once per session and
///   planned once; the claim's custom plan cost about 1.4 ms of planning on every call, its
///   generic plan none (the statements are written for index access whatever the values).
///   The batched ack alone is planned for each batch: its join's best plan depends on the
///   table's size, which a plan made once keeps from the session's first batch.
pub const SESSION_SETTINGS: [(&str, &str); 2] =
    [("jit", "off"), ("plan_cache_mode", "force_generic_plan")];

/// The Postgres [`JobDriver`].
#[derive(Debug, Clone)]
pub struct PostgresDriver {
    pool: PgPool,
    schema: Arc<str>,
    wake_channel: Arc<str>,
    sql: Arc<Statements>,
    /// The hot path's own connections, out of the pool.
    pinned: Arc<PinnedConnections>,
    /// Where each queue's claimable rows begin, as this driver's claims last saw them.
    floors: Arc<floors::ClaimFloors>,
    /// Which single enqueues announce their queue on the wake channel.
    announcer: Arc<announce::Announcer>,
    /// Whether the pool sets `TCP_NODELAY` as it dials (the pool `connect` builds); a pool of
    /// the caller's own does not, so its connections get it when they are pinned.
    pool_sets_nodelay: bool,
    /// The app tables' partitions in this database (`partition_store`).
    partitions: PgPartitions,
}

/// One pinned connection per sequential caller of the hot path.
#[derive(Debug)]
struct PinnedConnections {
    enqueue: pinned::Pinned,
    claim: pinned::Pinned,
    settle: pinned::Pinned,
}

impl Default for PinnedConnections {
    fn default() -> Self {
        PinnedConnections::replanned_every(REPLAN_EVERY, true)
    }
}

impl PinnedConnections {
    fn replanned_every(every: Duration, young_sooner: bool) -> Self {
        PinnedConnections {
            enqueue: pinned::Pinned::replanned_every(every, young_sooner),
            claim: pinned::Pinned::replanned_every(every, young_sooner),
            settle: pinned::Pinned::replanned_every(every, young_sooner),
        }
    }
}

impl PostgresDriver {
    /// Connects a pool to `url` and uses the `public` schema, waiting at most
    /// [`DEFAULT_CONNECT_TIMEOUT`] (5 s) for the server; see
    /// [`PostgresDriver::connect_with_timeout`].
    ///
    /// The pool's sessions run with [`SESSION_SETTINGS`]. A pool of your own given to
    /// [`PostgresDriver::new`] keeps its own settings; apply the same there (see
    /// [`PostgresDriver::tune`]).
    pub async fn connect(url: &str) -> Result<Self, JobError> {
        Self::connect_with_timeout(url, DEFAULT_CONNECT_TIMEOUT).await
    }

    /// [`PostgresDriver::connect`], waiting at most `timeout` for the server to accept the
    /// first connection.
    ///
    /// The first connection is opened on its own, so its failure says what is wrong:
    ///
    /// - a malformed URL: `X_DRIVER_URL_INVALID`;
    /// - a database the server does not have: `X_DRIVER_DATABASE_UNKNOWN`;
    /// - a refused login: `X_DRIVER_AUTH_FAILED`;
    /// - a server that refuses the connection, cannot be reached, or does not answer within
    ///   `timeout`: `X_DRIVER_UNAVAILABLE`, naming the host, the port and the OS error.
    ///
    /// The first three are configuration errors, terminal: retrying them cannot succeed.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), jobs::JobError> {
    /// use std::time::Duration;
    /// use jobs::driver::PostgresDriver;
    ///
    /// let driver =
    ///     PostgresDriver::connect_with_timeout("postgres://app@db.internal/app", Duration::from_secs(2))
    ///         .await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_with_timeout(url: &str, timeout: Duration) -> Result<Self, JobError> {
        let options = url
            .parse::<PgConnectOptions>()
            .map_err(|e| classify(Op::Connect, e))?;
        let options = Self::tune(options);
        connect::probe(&options, timeout).await?;
        // The probe proved the configuration; the pool dials on demand from here on.
        let server_port = options.get_port();
        let pool = PgPoolOptions::new()
            .max_connections(10)
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    nodelay::apply(conn, server_port).await;
                    Ok(())
                })
            })
            .connect_lazy_with(options);
        let driver = Self::new(pool, DEFAULT_SCHEMA)?;
        Ok(PostgresDriver {
            pool_sets_nodelay: true,
            ..driver
        })
    }

    /// Applies [`SESSION_SETTINGS`] to connect options of your own.
    ///
    /// ```
    /// # use jobs::driver::PostgresDriver;
    /// let options: jobs::sqlx::postgres::PgConnectOptions =
    ///     "postgres://localhost/app".parse().unwrap();
    /// let options = PostgresDriver::tune(options);
    /// ```
    pub fn tune(options: PgConnectOptions) -> PgConnectOptions {
        options.options(SESSION_SETTINGS)
    }

    /// A driver over an existing pool, keeping its tables in `schema` (a plain lower-case
    /// identifier; `X_DRIVER_URL_INVALID`, a configuration error, otherwise).
    pub fn new(pool: PgPool, schema: &str) -> Result<Self, JobError> {
        sql::check_schema(schema)?;
        Ok(PostgresDriver {
            partitions: PgPartitions::new(pool.clone()),
            pool,
            sql: Arc::new(Statements::new(schema)),
            schema: schema.into(),
            wake_channel: wake::channel(schema).into(),
            pinned: Arc::default(),
            floors: Arc::default(),
            announcer: Arc::default(),
            pool_sets_nodelay: false,
        })
    }

    /// The same driver, with its hot path's connections (enqueue, claim, ack) preparing their
    /// statements afresh every `every` instead of every [`REPLAN_EVERY`] (30 s).
    ///
    /// Each session plans a statement once, at its first use, and keeps the plan until the
    /// server invalidates it (an `ANALYZE` of the table does). A plan made while the table was
    /// nearly empty can read every row, and on a server with autovacuum off nothing ever
    /// invalidates it; preparing afresh bounds how long it lasts. Each time costs one round
    /// trip and a new plan for each statement at its next use. Left at the default, a connection
    /// also prepares afresh 1, 2, 4, 8 and 16 s after it was dialled, so the plans a fresh
    /// database's first statements made last a second rather than a whole period; set here,
    /// `every` is the one period.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), jobs::JobError> {
    /// use std::time::Duration;
    /// use jobs::driver::PostgresDriver;
    ///
    /// let driver = PostgresDriver::connect("postgres://app@db.internal/app")
    ///     .await?
    ///     .replan_every(Duration::from_secs(10));
    /// # Ok(()) }
    /// ```
    pub fn replan_every(self, every: Duration) -> Self {
        PostgresDriver {
            pinned: Arc::new(PinnedConnections::replanned_every(every, false)),
            ..self
        }
    }

    /// An unreachable server's error names where the pool connects (host and port, never the
    /// user or password): sqlx's own "pool timed out" names neither.
    fn located<T>(&self, result: Result<T, JobError>) -> Result<T, JobError> {
        result.map_err(|error| {
            if error.code() != Some(crate::error::ErrorCode::DriverUnavailable) {
                return error;
            }
            let at = connect::address(&self.pool.connect_options());
            if error.message().contains(&at) {
                return error;
            }
            error.with_context(format_args!("the pool connects to {at}"))
        })
    }

    /// The same pool, with the tables kept in `schema`.
    pub fn with_schema(self, schema: &str) -> Result<Self, JobError> {
        let pool_sets_nodelay = self.pool_sets_nodelay;
        Ok(PostgresDriver {
            pool_sets_nodelay,
            ..Self::new(self.pool, schema)?
        })
    }

    /// Whether a connection of this driver's pool has `TCP_NODELAY` (`None` when its socket
    /// cannot be found, as over a Unix socket); for the tests of the option sqlx 0.9.0 no
    /// longer sets (driver/postgres/nodelay.rs).
    #[doc(hidden)]
    pub async fn tcp_nodelay(&self, conn: &mut PgConnection) -> Option<bool> {
        nodelay::is_set(conn, self.pool.connect_options().get_port()).await
    }

    /// The pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The schema.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Creates the schema and applies the embedded migrations not yet applied. Idempotent, and
    /// safe to run from several processes at once. Answers the versions it applied.
    pub async fn migrate(&self) -> Result<Vec<i32>, JobError> {
        migrate::migrate(&self.pool, &self.schema).await
    }
}

#[async_trait]
impl JobDriver for PostgresDriver {
    fn name(&self) -> &'static str {
        "postgres"
    }

    fn caller_transaction(&self) -> Option<&dyn crate::driver::CallerTransaction> {
        Some(self)
    }

    async fn migrate(&self) -> Result<Vec<i32>, JobError> {
        self.located(PostgresDriver::migrate(self).await)
    }

    async fn store_check(&self) -> Result<crate::driver::StoreCheck, JobError> {
        self.located(migrate::store_check(&self.pool, &self.schema).await)
    }

    fn scheduler_store(&self) -> Option<&dyn super::SchedulerStore> {
        Some(self)
    }

    fn introspect(&self) -> Option<&dyn super::JobIntrospection> {
        Some(self)
    }

    fn lease_store(&self) -> Option<&dyn crate::driver::lease::LeaseStore> {
        Some(self)
    }

    fn backfill_store(&self) -> Option<&dyn super::BackfillStore> {
        Some(self)
    }

    fn partition_store(&self) -> Option<&dyn super::partition_store::PartitionStore> {
        Some(&self.partitions)
    }

    fn ledger_book(&self) -> Option<&dyn super::LedgerBook> {
        Some(self)
    }

    fn webhook_ledger(&self) -> Option<&dyn super::WebhookLedger> {
        Some(self)
    }

    async fn job_enqueue(&self, request: &EnqueueRequest) -> Result<EnqueueResult, JobError> {
        let result = match &request.dependencies {
            Some(dependencies) => self.enqueue_dependent(request, dependencies).await,
            None => self.enqueue_one(request).await,
        };
        self.located(result)
    }

    async fn job_enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        self.located(self.enqueue_many(requests).await)
    }

    async fn job_claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
        self.located(self.claim(params).await)
    }

    async fn job_ack(&self, params: &AckParams) -> Result<bool, JobError> {
        self.located(self.ack(params).await)
    }

    async fn job_ack_many(&self, params: &[AckParams]) -> Result<Vec<bool>, JobError> {
        self.located(self.ack_many(params).await)
    }

    async fn job_nack(&self, params: &NackParams) -> Result<bool, JobError> {
        self.located(self.nack(params).await)
    }

    async fn job_purge(&self, params: &JobPurgeParams) -> Result<u64, JobError> {
        self.located(self.purge_jobs(params).await)
    }

    async fn event_purge(&self, params: &EventPurgeParams) -> Result<u64, JobError> {
        self.located(self.purge_events(params).await)
    }

    async fn job_heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError> {
        self.located(self.heartbeat(params).await)
    }

    async fn job_progress(&self, params: &ProgressParams) -> Result<bool, JobError> {
        self.located(self.progress(params).await)
    }

    async fn job_get(&self, params: &JobGetParams) -> Result<Option<JobRecord>, JobError> {
        self.located(self.read_job(params).await)
    }

    async fn job_links(&self, id: JobId) -> Result<JobLinks, JobError> {
        self.located(self.links(id).await)
    }

    async fn job_release_pending(&self, now: crate::clock::Timestamp) -> Result<(), JobError> {
        self.located(self.release_pending(now).await)
    }

    async fn job_cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError> {
        self.located(self.cancel(params).await)
    }

    async fn job_group_join(&self, params: &GroupJoinParams<'_>) -> Result<GroupRecord, JobError> {
        self.located(self.group_join(params).await)
    }

    async fn job_group_get(&self, group: GroupId) -> Result<Option<GroupRecord>, JobError> {
        self.located(self.group_get(group).await)
    }

    async fn job_group_members(
        &self,
        params: &GroupMembersParams,
    ) -> Result<Vec<GroupMember>, JobError> {
        self.located(self.group_members(params).await)
    }

    async fn job_group_wake(
        &self,
        params: &GroupWakeParams,
    ) -> Result<Option<GroupRecord>, JobError> {
        self.located(self.group_wake(params).await)
    }

    async fn queue_stats(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        self.located(self.read_queue_stats(params).await)
    }

    async fn queue_depth(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        self.located(self.read_queue_depth(params).await)
    }

    async fn queue_next_due(&self, params: &NextDueParams) -> Result<Vec<QueueDue>, JobError> {
        self.located(self.read_next_due(params).await)
    }

    async fn step_list(&self, params: &StepListParams) -> Result<Vec<StepRecord>, JobError> {
        self.located(self.list_steps(params).await)
    }

    async fn step_put(&self, params: &StepPutParams<'_>) -> Result<bool, JobError> {
        self.located(self.put_step(params).await)
    }

    async fn event_publish(&self, event: &EventPublish) -> Result<EventId, JobError> {
        self.located(self.publish_event(event).await)
    }

    async fn event_mark(&self) -> Result<String, JobError> {
        self.located(self.mark_events().await)
    }

    async fn event_find(&self, params: &EventFindParams<'_>) -> Result<Option<JobEvent>, JobError> {
        self.located(self.find_event(params).await)
    }

    async fn wake_listen(&self) -> Result<Option<WakeReceiver>, JobError> {
        Ok(Some(wake::spawn(
            self.pool.clone(),
            self.wake_channel.to_string(),
        )))
    }
}
