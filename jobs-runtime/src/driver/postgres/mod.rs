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

mod backfill;
mod classify;
mod connect;
mod floors;
mod introspect;
mod lease;
mod migrate;
mod nodelay;
mod pinned;
mod rows;
mod scheduler;
mod sql;
mod wake;
mod webhook_ledger;

pub use backfill::PostgresBook;
pub use connect::DEFAULT_CONNECT_TIMEOUT;
pub use migrate::{Migration, MIGRATIONS};
pub use pinned::REPLAN_EVERY;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::Connection;
use sqlx::Row;

use self::classify::{classify, Op};
use self::sql::Statements;
use super::records::*;
use super::{JobDriver, WakeReceiver};
use crate::clock::{add, Timestamp};
use crate::driver::introspect::JobVerb;
use crate::driver::{
    EventFindParams, JobCancelParams, JobGetParams, QueueStatsParams, StepListParams, StepPutParams,
};
use crate::error::{ErrorCode, JobError};

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
    /// Whether the pool sets `TCP_NODELAY` as it dials (the pool `connect` builds); a pool of
    /// the caller's own does not, so its connections get it when they are pinned.
    pool_sets_nodelay: bool,
}

/// The SQLSTATE of a unique violation.
const UNIQUE_VIOLATION: &str = "23505";

/// Whose transaction an enqueue runs in: its own one-statement transaction may fail and roll
/// back alone; a caller's (or a batch's) must not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transaction {
    Own,
    Callers,
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
        PinnedConnections::replanned_every(REPLAN_EVERY)
    }
}

impl PinnedConnections {
    fn replanned_every(every: Duration) -> Self {
        PinnedConnections {
            enqueue: pinned::Pinned::replanned_every(every),
            claim: pinned::Pinned::replanned_every(every),
            settle: pinned::Pinned::replanned_every(every),
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
    /// identifier; `X_INVARIANT` otherwise).
    pub fn new(pool: PgPool, schema: &str) -> Result<Self, JobError> {
        sql::check_schema(schema)?;
        Ok(PostgresDriver {
            pool,
            sql: Arc::new(Statements::new(schema)),
            schema: schema.into(),
            wake_channel: wake::channel(schema).into(),
            pinned: Arc::default(),
            floors: Arc::default(),
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
    /// trip and a new plan for each statement at its next use.
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
            pinned: Arc::new(PinnedConnections::replanned_every(every)),
            ..self
        }
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

    /// Enqueues on the caller's connection or transaction: the job exists if and only if that
    /// transaction commits (the transactional outbox).
    pub async fn enqueue_in(
        &self,
        conn: &mut PgConnection,
        request: &EnqueueRequest,
    ) -> Result<EnqueueResult, JobError> {
        self.enqueue_on(conn, request, request.now, Transaction::Callers)
            .await
    }

    /// Inserts `request` as of `now` (its own `now`, or its batch's).
    async fn enqueue_on(
        &self,
        conn: &mut PgConnection,
        request: &EnqueueRequest,
        now: Timestamp,
        transaction: Transaction,
    ) -> Result<EnqueueResult, JobError> {
        let failed = |e| classify(Op::JobEnqueue, e);
        // The insert answers nothing when a row holds the job; the holder lookup then names it.
        // A holder that finished in between frees the key: insert again. Three rounds at most.
        let statement = match transaction {
            Transaction::Own => &self.sql.job_enqueue,
            Transaction::Callers => &self.sql.job_enqueue_in,
        };
        for _ in 0..ENQUEUE_ROUNDS {
            let inserted = sqlx::query(statement.clone())
                .bind(request.id)
                .bind(request.run_id)
                .bind(&request.name)
                .bind(&request.queue)
                .bind(&request.input)
                .bind(&request.idempotency_key)
                .bind(&request.tenant_id)
                .bind(i32::try_from(request.max_attempts).unwrap_or(i32::MAX))
                .bind(request.run_at)
                .bind(now)
                .bind(&*self.wake_channel)
                .bind(wake_slot(now))
                .bind(&request.traceparent)
                .bind(&request.actor)
                .fetch_optional(&mut *conn)
                .await;
            // In its own transaction, a key or id taken under the statement is a unique
            // violation that rolled back only that statement: find the holder.
            let inserted = match inserted {
                Err(sqlx::Error::Database(db))
                    if transaction == Transaction::Own
                        && db.code().as_deref() == Some(UNIQUE_VIOLATION) =>
                {
                    None
                }
                other => other.map_err(failed)?,
            };
            if let Some(row) = inserted {
                self.floors.lower(
                    &request.queue,
                    request.tenant_id.as_deref(),
                    floors::Position {
                        at: request.run_at,
                        id: request.id,
                    },
                );
                return Ok(EnqueueResult {
                    id: row.try_get("id").map_err(failed)?,
                    run_id: row.try_get("run_id").map_err(failed)?,
                    deduped: false,
                });
            }
            let holder = sqlx::query(self.sql.job_enqueue_holder.clone())
                .bind(request.id)
                .bind(&request.name)
                .bind(&request.tenant_id)
                .bind(&request.idempotency_key)
                .fetch_optional(&mut *conn)
                .await
                .map_err(failed)?;
            let Some(row) = holder else { continue };
            return EnqueueResult::held(
                request,
                row.try_get("id").map_err(failed)?,
                row.try_get("run_id").map_err(failed)?,
                row.try_get("same_id").map_err(failed)?,
            );
        }
        Err(EnqueueResult::key_kept_moving(request))
    }

    /// Publishes an event on the caller's connection or transaction: it is seen, and wakes the
    /// parked runs, only if that transaction commits.
    pub async fn event_publish_in(
        &self,
        conn: &mut PgConnection,
        event: &EventPublish,
    ) -> Result<EventId, JobError> {
        let row = sqlx::query(self.sql.event_publish.clone())
            .bind(event.id)
            .bind(&event.name)
            .bind(&event.key)
            .bind(&event.payload)
            .bind(event.now)
            .bind(add(event.now, event.ttl))
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| classify(Op::EventPublish, e))?;
        // The publish makes the runs parked on it due at its `now`, which may be behind a
        // floor by the time it commits.
        self.floors.forget();
        row.try_get("id").map_err(|e| classify(Op::EventPublish, e))
    }

    /// `statement` (job_enqueue_many or its dedupe form) bound to a whole batch (`UNNEST`
    /// arrays).
    fn bind_batch<'q>(
        &self,
        statement: &sqlx::SqlStr,
        batch: &'q [EnqueueRequest],
        now: Timestamp,
    ) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
        let column = |f: fn(&EnqueueRequest) -> String| batch.iter().map(f).collect::<Vec<_>>();
        sqlx::query(statement.clone())
            .bind(batch.iter().map(|r| r.id).collect::<Vec<_>>())
            .bind(batch.iter().map(|r| r.run_id).collect::<Vec<_>>())
            .bind(column(|r| r.name.clone()))
            .bind(column(|r| r.queue.clone()))
            .bind(batch.iter().map(|r| r.input.clone()).collect::<Vec<_>>())
            .bind(column(|r| r.idempotency_key.clone()))
            .bind(
                batch
                    .iter()
                    .map(|r| r.tenant_id.clone())
                    .collect::<Vec<_>>(),
            )
            .bind(
                batch
                    .iter()
                    .map(|r| i32::try_from(r.max_attempts).unwrap_or(i32::MAX))
                    .collect::<Vec<_>>(),
            )
            .bind(batch.iter().map(|r| r.run_at).collect::<Vec<_>>())
            .bind(
                batch
                    .iter()
                    .map(|r| r.traceparent.clone())
                    .collect::<Vec<_>>(),
            )
            .bind(now)
            .bind(&*self.wake_channel)
            .bind(batch.iter().map(|r| r.actor.clone()).collect::<Vec<_>>())
    }

    /// Inserts a batch of jobs none of which is held, in one plain statement; `Ok(false)` when
    /// one was held after all (a unique violation: the transaction is then aborted).
    async fn enqueue_batch_new(
        &self,
        conn: &mut PgConnection,
        batch: &[EnqueueRequest],
        now: Timestamp,
    ) -> Result<bool, JobError> {
        let inserted = self
            .bind_batch(&self.sql.job_enqueue_many, batch, now)
            .fetch_one(&mut *conn)
            .await;
        match inserted {
            Ok(_) => Ok(true),
            Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some(UNIQUE_VIOLATION) => {
                Ok(false)
            }
            Err(e) => Err(classify(Op::JobEnqueueMany, e)),
        }
    }

    /// One statement for a whole batch that may hold jobs already (`UNNEST` arrays); a row
    /// whose key holder committed while the statement ran goes through the single-row
    /// statement afterwards.
    async fn enqueue_batch(
        &self,
        conn: &mut PgConnection,
        batch: &[EnqueueRequest],
        now: Timestamp,
    ) -> Result<Vec<EnqueueResult>, JobError> {
        let failed = |e| classify(Op::JobEnqueueMany, e);
        let rows = self
            .bind_batch(&self.sql.job_enqueue_many_dedupe, batch, now)
            .fetch_all(&mut *conn)
            .await
            .map_err(failed)?;
        // Every job answers as inserted unless a row after the summary row names it.
        let mut out: Vec<EnqueueResult> = batch
            .iter()
            .map(|r| EnqueueResult {
                id: r.id,
                run_id: r.run_id,
                deduped: false,
            })
            .collect();
        for row in &rows {
            let Some(ord) = row.try_get::<Option<i64>, _>("ord").map_err(failed)? else {
                continue;
            };
            let index = usize::try_from(ord - 1)
                .ok()
                .filter(|i| *i < batch.len())
                .ok_or_else(|| {
                    JobError::new(
                        ErrorCode::Driver,
                        "job_enqueue_many answered a position outside its batch",
                    )
                })?;
            let id: Option<JobId> = row.try_get("id").map_err(failed)?;
            let run_id: Option<RunId> = row.try_get("run_id").map_err(failed)?;
            out[index] = match (id, run_id) {
                (Some(id), Some(run_id)) => EnqueueResult {
                    id,
                    run_id,
                    deduped: true,
                },
                _ => {
                    self.enqueue_on(&mut *conn, &batch[index], now, Transaction::Callers)
                        .await?
                }
            };
        }
        Ok(out)
    }

    /// A single enqueue on the pinned connection (or a pooled one when it is busy); answers
    /// whether the pinned one was used.
    async fn enqueue_pinned(
        &self,
        request: &EnqueueRequest,
    ) -> (Result<EnqueueResult, JobError>, bool) {
        let mut lease = match self
            .pinned
            .enqueue
            .lease(&self.pool, !self.pool_sets_nodelay)
            .await
        {
            Ok(lease) => lease,
            Err(e) => return (Err(classify(Op::JobEnqueue, e)), false),
        };
        let pinned = lease.is_pinned();
        let result = self
            .enqueue_on(lease.conn(), request, request.now, Transaction::Own)
            .await;
        lease.end(&result);
        (result, pinned)
    }

    async fn enqueue_many_on(
        &self,
        conn: &mut PgConnection,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        // One `now` for the batch (see `JobDriver::job_enqueue_many`): a job due at its own
        // `now` is `ready`, whichever request read the clock last.
        let Some(now) = requests.iter().map(|r| r.now).max() else {
            return Ok(Vec::new());
        };
        // A deduped row lowers a floor for nothing, which costs nothing.
        self.floors.lower_all(requests.iter().map(|r| {
            (
                r.queue.as_str(),
                r.tenant_id.as_deref(),
                floors::Position {
                    at: r.run_at,
                    id: r.id,
                },
            )
        }));
        let refuse_duplicates = requests
            .iter()
            .any(|r| r.on_conflict == ConflictPolicy::Error);
        if !refuse_duplicates {
            // First as plain inserts, in one transaction: all of them or none. A job held
            // already aborts it, and the batch is done again below, answering each held one.
            let mut tx = conn
                .begin()
                .await
                .map_err(|e| classify(Op::JobEnqueueMany, e))?;
            let mut all_new = true;
            for chunk in requests.chunks(ENQUEUE_BATCH) {
                if !self.enqueue_batch_new(&mut tx, chunk, now).await? {
                    all_new = false;
                    break;
                }
            }
            if all_new {
                tx.commit()
                    .await
                    .map_err(|e| classify(Op::JobEnqueueMany, e))?;
                return Ok(requests
                    .iter()
                    .map(|r| EnqueueResult {
                        id: r.id,
                        run_id: r.run_id,
                        deduped: false,
                    })
                    .collect());
            }
            tx.rollback()
                .await
                .map_err(|e| classify(Op::JobEnqueueMany, e))?;
        }
        // One transaction: all of them or none.
        let mut tx = conn
            .begin()
            .await
            .map_err(|e| classify(Op::JobEnqueueMany, e))?;
        let mut out = Vec::with_capacity(requests.len());
        if refuse_duplicates {
            // Refusing a duplicate must name it: one statement per job.
            for request in requests {
                out.push(
                    self.enqueue_on(&mut tx, request, now, Transaction::Callers)
                        .await?,
                );
            }
        } else {
            for chunk in requests.chunks(ENQUEUE_BATCH) {
                out.extend(self.enqueue_batch(&mut tx, chunk, now).await?);
            }
        }
        tx.commit()
            .await
            .map_err(|e| classify(Op::JobEnqueueMany, e))?;
        Ok(out)
    }

    async fn claim_on(
        &self,
        conn: &mut PgConnection,
        params: &ClaimParams,
    ) -> Result<ClaimResult, JobError> {
        if params.demand.is_empty() {
            return Err(JobError::new(
                ErrorCode::JobClaimQueuesEmpty,
                "a claim named no queue",
            ));
        }
        let queues: Vec<&str> = params.demand.iter().map(|d| d.queue.as_str()).collect();
        let slots: Vec<i32> = params.demand.iter().map(|d| claim_slots(d.limit)).collect();
        let visible_at = add(params.now, params.visibility_timeout);
        let failed = |e| classify(Op::JobClaim, e);
        let mut result = ClaimResult::default();
        if let Some(known) = self.floors.known(&queues, params.now) {
            // One queue of one tenant (the common case): the same claim without tenant turns.
            let query = match (&queues[..], &known.tenant[..]) {
                ([queue], [tenant]) => sqlx::query(self.sql.job_claim_one.clone())
                    .bind(*queue)
                    .bind(slots[0])
                    .bind(&params.worker_id)
                    .bind(params.now)
                    .bind(visible_at)
                    .bind(tenant)
                    .bind(known.at[0])
                    .bind(known.id[0]),
                _ => sqlx::query(self.sql.job_claim_known.clone())
                    .bind(&queues)
                    .bind(&slots)
                    .bind(&params.worker_id)
                    .bind(params.now)
                    .bind(visible_at)
                    .bind(&known.queue)
                    .bind(&known.tenant)
                    .bind(&known.at)
                    .bind(&known.id),
            };
            let rows = query.fetch_all(&mut *conn).await.map_err(failed)?;
            for row in &rows {
                result.jobs.push(claimed_job(row, params, visible_at)?);
            }
        }
        // Rows from the known tenants are this claim; else the planned claim looks everywhere.
        let plan = if result.jobs.is_empty() {
            Some(self.floors.plan(&queues, params.now))
        } else {
            self.floors.after_known(params.now);
            None
        };
        match plan {
            Some(floors::Plan::Full) => {
                let started = std::time::Instant::now();
                let rows = sqlx::query(self.sql.job_claim.clone())
                    .bind(&queues)
                    .bind(&slots)
                    .bind(&params.worker_id)
                    .bind(params.now)
                    .bind(visible_at)
                    .bind(&params.drop_exhausted)
                    .bind(&params.fair_after)
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(failed)?;
                let took = started.elapsed();
                let mut taken = Vec::with_capacity(rows.len());
                for row in &rows {
                    let buried: bool = row.try_get("buried").map_err(failed)?;
                    let record = rows::job_record(row)?;
                    if buried {
                        result.exhausted.push(record);
                        continue;
                    }
                    let has_steps: bool = row.try_get("has_steps").map_err(failed)?;
                    taken.push(floors::Taken {
                        queue: record.queue.clone(),
                        tenant: record.tenant_id.clone().unwrap_or_default(),
                        at: floors::Position {
                            at: record.run_at,
                            id: record.id,
                        },
                    });
                    result.jobs.push(ClaimedJob::from_claimed_row(
                        record, has_steps, params, visible_at,
                    ));
                }
                self.floors
                    .after_full(&queues, params.now, &taken, started, took);
            }
            Some(floors::Plan::From(from)) => {
                let started = std::time::Instant::now();
                let rows = sqlx::query(self.sql.job_claim_from.clone())
                    .bind(&queues)
                    .bind(&slots)
                    .bind(&params.worker_id)
                    .bind(params.now)
                    .bind(visible_at)
                    .bind(&params.fair_after)
                    .bind(&from.queue)
                    .bind(&from.tenant)
                    .bind(&from.at)
                    .bind(&from.id)
                    .bind(&from.discovery)
                    .bind(&from.lapse)
                    .bind(&params.drop_exhausted)
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(failed)?;
                let (mut heads, mut lapses) = (Vec::new(), Vec::new());
                for row in &rows {
                    let kind: &str = row.try_get("kind").map_err(failed)?;
                    match kind {
                        "head" => {
                            let at: Option<Timestamp> = row.try_get("run_at").map_err(failed)?;
                            let id: Option<JobId> = row.try_get("id").map_err(failed)?;
                            heads.push(floors::Head {
                                queue: row.try_get("queue").map_err(failed)?,
                                tenant: row.try_get("tenant_id").map_err(failed)?,
                                at: at.zip(id).map(|(at, id)| floors::Position { at, id }),
                            });
                        }
                        "lapse" => lapses.push(floors::Lapse {
                            queue: row.try_get("queue").map_err(failed)?,
                            at: row.try_get("visible_at").map_err(failed)?,
                        }),
                        "buried" => result.exhausted.push(rows::job_record(row)?),
                        _ => result.jobs.push(claimed_job(row, params, visible_at)?),
                    }
                }
                self.floors
                    .after_from(&queues, params.now, started, &heads, &lapses);
            }
            None => {}
        }
        // The statement's order is not the claim order once the queues are merged.
        result.jobs.sort_by_key(|j| j.id);
        Ok(result)
    }

    async fn ack_many_on(
        &self,
        conn: &mut PgConnection,
        params: &[AckParams],
    ) -> Result<Vec<bool>, JobError> {
        let Some(now) = params.iter().map(|p| p.now).max() else {
            return Ok(Vec::new());
        };
        // Planned afresh for each batch (an unnamed statement), not once per session as the
        // other statements are (`SESSION_SETTINGS`): a plan guesses 10 ids and keeps the
        // table's size from when it was made, so one made while the table was small joins every
        // later batch to a scan of the whole table until something replans it (measured with
        // autovacuum off: a drain fell from 16,000 to 4,400 jobs/s within 2 minutes). The cost
        // is server time on every batch: parse 0.36 ms and plan 0.37 ms, beside 0.20 ms of
        // execution, for a batch of one (the statement log of one job every 50 ms). A full
        // drain's batches are large, and it did not move (12,082-12,414 jobs/s before,
        // 12,199-12,515 after); a worker whose acks trickle in one by one pays it on each.
        let landed: Vec<JobId> = sqlx::query_scalar(self.sql.job_ack_many.clone())
            .persistent(false)
            .bind(params.iter().map(|p| p.job_id).collect::<Vec<_>>())
            .bind(
                params
                    .iter()
                    .map(|p| p.by.worker_id.to_string())
                    .collect::<Vec<_>>(),
            )
            .bind(params.iter().map(|p| p.by.claim).collect::<Vec<_>>())
            .bind(now)
            .fetch_all(&mut *conn)
            .await
            .map_err(|e| classify(Op::JobAckMany, e))?;
        let landed: std::collections::HashSet<JobId> = landed.into_iter().collect();
        Ok(params.iter().map(|p| landed.contains(&p.job_id)).collect())
    }

    /// Runs a statement that changes one running row under its claim (an ack, a nack, a
    /// heartbeat, a progress note, a step write), binding the state it must be in,
    /// `'running'`, as its last parameter: the answer is whether the row matched.
    ///
    /// Why a parameter and not the constant: the constant implies the predicate of
    /// `x_jobs_lapsed_idx` (`where state = 'running'`), and the session's generic plan
    /// (`SESSION_SETTINGS`) is made once, at the statement's first use. Made while the table was
    /// small and never analyzed, that plan read the whole running-rows index with `id = $1` as a
    /// filter, and kept doing so as the table grew (under a held snapshot that index holds an
    /// entry for every claim since). With the state bound, the primary key is the only index
    /// that fits.
    async fn execute_fenced(
        &self,
        operation: Op,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> Result<bool, JobError> {
        let done = query
            .bind(JobState::Running.as_str())
            .execute(&self.pool)
            .await
            .map_err(|e| classify(operation, e))?;
        Ok(done.rows_affected() == 1)
    }
}

/// Jobs per statement in `job_enqueue_many`.
const ENQUEUE_BATCH: usize = 5_000;

/// Enqueues announce their queue at most once per slot of this length.
const WAKE_SLOT_MS: i64 = 250;

/// The start of the wake slot `now` falls in.
fn wake_slot(now: Timestamp) -> Timestamp {
    let ms = now.timestamp_millis();
    let start = ms - ms.rem_euclid(WAKE_SLOT_MS);
    chrono::DateTime::from_timestamp_millis(start).unwrap_or(now)
}

/// A claimed job from a claim statement's row (the job's columns and `has_steps`).
fn claimed_job(
    row: &sqlx::postgres::PgRow,
    params: &ClaimParams,
    visible_at: Timestamp,
) -> Result<ClaimedJob, JobError> {
    let record = rows::job_record(row)?;
    let has_steps: bool = row
        .try_get("has_steps")
        .map_err(|e| classify(Op::JobClaim, e))?;
    Ok(ClaimedJob::from_claimed_row(
        record, has_steps, params, visible_at,
    ))
}

fn claim_slots(limit: u32) -> i32 {
    i32::try_from(limit).unwrap_or(i32::MAX)
}

impl PostgresDriver {
    /// Folds `sql`'s rows (queue, state, not_due, n, oldest_run_at) into one row per queue.
    async fn queue_counts(
        &self,
        sql: sqlx::SqlStr,
        now: Timestamp,
    ) -> Result<Vec<QueueStats>, JobError> {
        let rows = sqlx::query(sql)
            .bind(now)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::QueueStats, e))?;
        let mut by_queue: std::collections::BTreeMap<String, QueueStats> = Default::default();
        for row in &rows {
            let get = |e| classify(Op::QueueStats, e);
            let queue: String = row.try_get("queue").map_err(get)?;
            let state: String = row.try_get("state").map_err(get)?;
            let not_due: bool = row.try_get("not_due").map_err(get)?;
            let n = u64::try_from(row.try_get::<i64, _>("n").map_err(get)?).unwrap_or(0);
            let oldest: Option<Timestamp> = row.try_get("oldest_run_at").map_err(get)?;
            let stats = by_queue.entry(queue.clone()).or_insert_with(|| QueueStats {
                queue,
                ..QueueStats::default()
            });
            match JobState::parse(&state)? {
                JobState::Ready | JobState::Delayed if not_due => stats.delayed += n,
                JobState::Ready | JobState::Delayed => {
                    stats.ready += n;
                    if let Some(oldest) = oldest {
                        let age = (now - oldest).num_milliseconds().max(0) as u64;
                        stats.oldest_ready_ms = Some(stats.oldest_ready_ms.unwrap_or(0).max(age));
                    }
                }
                JobState::Running => stats.running += n,
                JobState::Suspended => stats.suspended += n,
                JobState::Done => stats.done += n,
                JobState::Failed => stats.failed += n,
                JobState::Dead => stats.dead += n,
                JobState::Cancelled => stats.cancelled += n,
            }
        }
        Ok(by_queue.into_values().collect())
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
        PostgresDriver::migrate(self).await
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

    fn ledger_book(&self) -> Option<&dyn super::LedgerBook> {
        Some(self)
    }

    fn webhook_ledger(&self) -> Option<&dyn super::WebhookLedger> {
        Some(self)
    }

    async fn job_enqueue(&self, request: &EnqueueRequest) -> Result<EnqueueResult, JobError> {
        match self.enqueue_pinned(request).await {
            (Err(error), true) if error.code() == Some(ErrorCode::DriverUnavailable) => {
                // The pinned connection died since its last call (a server restart, an idle
                // timeout): once more, on a fresh one. The request keeps its id, so a first try
                // that did commit is found by id: that row is this very job, not a duplicate.
                let (retried, _) = self.enqueue_pinned(request).await;
                retried.map(|r| EnqueueResult {
                    deduped: r.deduped && r.id != request.id,
                    ..r
                })
            }
            (result, _) => result,
        }
    }

    async fn job_enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        let mut lease = self
            .pinned
            .enqueue
            .lease(&self.pool, !self.pool_sets_nodelay)
            .await
            .map_err(|e| classify(Op::JobEnqueueMany, e))?;
        let result = self.enqueue_many_on(lease.conn(), requests).await;
        lease.end(&result);
        result
    }

    async fn job_claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
        let mut lease = self
            .pinned
            .claim
            .lease(&self.pool, !self.pool_sets_nodelay)
            .await
            .map_err(|e| classify(Op::JobClaim, e))?;
        let result = self.claim_on(lease.conn(), params).await;
        lease.end(&result);
        result
    }

    async fn job_ack(&self, params: &AckParams) -> Result<bool, JobError> {
        let query = sqlx::query(self.sql.job_ack.clone())
            .bind(params.job_id)
            .bind(&params.by.worker_id)
            .bind(params.by.claim)
            .bind(params.now);
        self.execute_fenced(Op::JobAck, query).await
    }

    async fn job_ack_many(&self, params: &[AckParams]) -> Result<Vec<bool>, JobError> {
        let mut lease = self
            .pinned
            .settle
            .lease(&self.pool, !self.pool_sets_nodelay)
            .await
            .map_err(|e| classify(Op::JobAckMany, e))?;
        let result = self.ack_many_on(lease.conn(), params).await;
        lease.end(&result);
        result
    }

    async fn job_nack(&self, params: &NackParams) -> Result<bool, JobError> {
        let query = sqlx::query(self.sql.job_nack.clone())
            .bind(params.job_id)
            .bind(&params.by.worker_id)
            .bind(params.by.claim)
            .bind(params.target.state().as_str())
            .bind(params.counts_as_attempt)
            .bind(params.run_at)
            .bind(&params.error)
            .bind(&params.error_code)
            .bind(params.now);
        self.execute_fenced(Op::JobNack, query).await
    }

    async fn job_purge(&self, params: &JobPurgeParams) -> Result<u64, JobError> {
        let purge = |e| classify(Op::JobPurge, e);
        // The jobs, then the history of the jobs gone, in one transaction: job_purge.sql
        // answers only a count, so history_purge.sql finds the gone jobs' rows by their absence.
        let mut tx = self.pool.begin().await.map_err(purge)?;
        let gone: i64 = sqlx::query_scalar(self.sql.job_purge.clone())
            .bind(params.done_before)
            .bind(params.finished_before)
            .bind(i64::from(params.limit))
            .fetch_one(&mut *tx)
            .await
            .map_err(purge)?;
        sqlx::query(self.sql.history_purge.clone())
            .bind(params.done_before.max(params.finished_before))
            .bind(i64::from(params.limit))
            .execute(&mut *tx)
            .await
            .map_err(|e| classify(Op::HistoryPurge, e))?;
        tx.commit().await.map_err(purge)?;
        Ok(u64::try_from(gone).unwrap_or(0))
    }

    async fn event_purge(&self, params: &EventPurgeParams) -> Result<u64, JobError> {
        let gone: i64 = sqlx::query_scalar(self.sql.event_purge.clone())
            .bind(params.now)
            .bind(i64::from(params.limit))
            .fetch_one(&self.pool)
            .await
            .map_err(|e| classify(Op::EventPurge, e))?;
        Ok(u64::try_from(gone).unwrap_or(0))
    }

    async fn job_heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError> {
        let query = sqlx::query(self.sql.job_heartbeat.clone())
            .bind(params.job_id)
            .bind(&params.by.worker_id)
            .bind(params.by.claim)
            .bind(add(params.now, params.visibility_timeout))
            .bind(params.now);
        self.execute_fenced(Op::JobHeartbeat, query).await
    }

    async fn job_progress(&self, params: &ProgressParams) -> Result<bool, JobError> {
        let progress = serde_json::to_value(&params.progress).unwrap_or_default();
        let query = sqlx::query(self.sql.job_progress.clone())
            .bind(params.job_id)
            .bind(&params.by.worker_id)
            .bind(params.by.claim)
            .bind(progress)
            .bind(params.now);
        self.execute_fenced(Op::JobProgress, query).await
    }

    async fn job_get(&self, params: &JobGetParams) -> Result<Option<JobRecord>, JobError> {
        let JobGetParams { id } = *params;
        let row = sqlx::query(self.sql.job_get.clone())
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::JobGet, e))?;
        row.as_ref().map(rows::job_record).transpose()
    }

    async fn job_cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError> {
        let (id, now) = (params.id, params.now);
        let cancel = |e| classify(Op::JobCancel, e);
        // The cancel and its history row commit together.
        let mut tx = self.pool.begin().await.map_err(cancel)?;
        let row = sqlx::query(self.sql.job_cancel.clone())
            .bind(id)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await
            .map_err(cancel)?;
        if let Some(row) = row {
            let cancelled = rows::job_record(&row)?;
            sqlx::query(self.sql.history_append.clone())
                .bind(cancelled.id)
                .bind(&cancelled.tenant_id)
                .bind(now)
                .bind(&params.actor)
                .bind(JobVerb::Cancel.as_str())
                .bind(None::<&str>)
                .execute(&mut *tx)
                .await
                .map_err(|e| classify(Op::HistoryAppend, e))?;
            tx.commit().await.map_err(cancel)?;
            return Ok(cancelled);
        }
        drop(tx);
        let message = match self.job_get(&JobGetParams { id }).await? {
            Some(job) => format!("job {id} is {}, not live", job.state),
            None => format!("no job with id {id}"),
        };
        Err(JobError::new(ErrorCode::JobNotCancellable, message))
    }

    async fn queue_stats(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        self.queue_counts(self.sql.queue_stats.clone(), params.now)
            .await
    }

    async fn queue_depth(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        self.queue_counts(self.sql.queue_depth.clone(), params.now)
            .await
    }

    async fn step_list(&self, params: &StepListParams) -> Result<Vec<StepRecord>, JobError> {
        let StepListParams { run_id } = *params;
        let rows = sqlx::query(self.sql.step_list.clone())
            .bind(run_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::StepList, e))?;
        rows.iter().map(rows::step_record).collect()
    }

    async fn step_put(&self, params: &StepPutParams<'_>) -> Result<bool, JobError> {
        let StepPutParams { record, fence } = *params;
        let wait = record
            .wait
            .as_ref()
            .map(serde_json::to_value)
            .transpose()
            .map_err(|_| JobError::new(ErrorCode::StepRecordInvalid, "a wait did not serialize"))?;
        let query = sqlx::query(self.sql.step_put.clone())
            .bind(record.run_id)
            .bind(&record.name)
            .bind(record.status.as_str())
            .bind(&record.output)
            .bind(&record.error)
            .bind(i32::try_from(record.attempts).unwrap_or(i32::MAX))
            .bind(record.wake_at)
            .bind(wait)
            .bind(record.updated_at)
            .bind(fence.job_id)
            .bind(&fence.by.worker_id)
            .bind(fence.by.claim);
        self.execute_fenced(Op::StepPut, query).await
    }

    async fn event_publish(&self, event: &EventPublish) -> Result<EventId, JobError> {
        let mut conn = self
            .pool
            .acquire()
            .await
            .map_err(|e| classify(Op::EventPublish, e))?;
        self.event_publish_in(&mut conn, event).await
    }

    async fn wake_listen(&self) -> Result<Option<WakeReceiver>, JobError> {
        Ok(Some(wake::spawn(
            self.pool.clone(),
            self.wake_channel.to_string(),
        )))
    }

    async fn event_mark(&self) -> Result<String, JobError> {
        sqlx::query_scalar(self.sql.event_mark.clone())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| classify(Op::EventMark, e))
    }

    async fn event_find(&self, params: &EventFindParams<'_>) -> Result<Option<JobEvent>, JobError> {
        let EventFindParams {
            name,
            key,
            since,
            now,
        } = *params;
        let row = sqlx::query(self.sql.event_find.clone())
            .bind(name)
            .bind(key)
            .bind(&since.mark)
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::EventFind, e))?;
        row.as_ref().map(rows::job_event).transpose()
    }
}

#[async_trait]
impl crate::driver::CallerTransaction for PostgresDriver {
    async fn job_enqueue_in(
        &self,
        conn: crate::driver::caller_tx::CallerConn<'_>,
        request: &EnqueueRequest,
    ) -> Result<EnqueueResult, JobError> {
        let conn = own_connection(conn)?;
        self.enqueue_in(conn, request).await
    }

    async fn event_publish_in(
        &self,
        conn: crate::driver::caller_tx::CallerConn<'_>,
        event: &EventPublish,
    ) -> Result<EventId, JobError> {
        let conn = own_connection(conn)?;
        PostgresDriver::event_publish_in(self, conn, event).await
    }
}

/// The caller's connection, when it is a Postgres one.
fn own_connection(
    conn: crate::driver::caller_tx::CallerConn<'_>,
) -> Result<&mut PgConnection, JobError> {
    conn.downcast_mut::<PgConnection>()
        .ok_or_else(|| crate::driver::caller_tx::foreign_connection("postgres", "PgConnection"))
}
