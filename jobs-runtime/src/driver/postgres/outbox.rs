//! The outbox on Postgres ([`PostgresOutbox`]): `x_outbox` in the app's database, staged on the
//! caller's transaction, claimed by the relay under the one-row lease `x_outbox_lease`, whose
//! row lock makes claims take turns.
//! Its statements are the `outbox_*.sql` files beside this module.

use std::sync::Arc;

use async_trait::async_trait;
use sqlx::postgres::{PgConnection, PgPool};
use sqlx::{Row, SqlStr};

use super::classify::{classify, Op};
use super::enqueue::job_query;
use super::sql::{check_schema, render, safe};
use super::wake;
use crate::clock::Timestamp;
use crate::driver::caller_tx::{foreign_connection, CallerConn};
use crate::driver::outbox::*;
use crate::driver::records::{EnqueueRequest, JobId};
use crate::driver::WakeReceiver;
use crate::error::JobError;

/// The outbox's DDL: the jobs' migrations 23, 25 (its `priority` column), 27 (its
/// `unique_for_ms` column) and 32 (the relay's lease row), which [`PostgresOutbox::install`]
/// also runs.
const DDL: &str = concat!(
    include_str!("../../../migrations/0023_outbox.sql"),
    "\n",
    include_str!("../../../migrations/0025_outbox_priority.sql"),
    "\n",
    include_str!("../../../migrations/0027_outbox_unique_for.sql"),
    "\n",
    include_str!("../../../migrations/0032_outbox_lease.sql")
);

#[derive(Debug)]
struct Statements {
    stage: SqlStr,
    claim: SqlStr,
    published: SqlStr,
    published_then_claim: SqlStr,
    release: SqlStr,
    refused: SqlStr,
    stats: SqlStr,
    purge: SqlStr,
}

impl Statements {
    fn new(schema: &str) -> Self {
        let sql = |text: &str| safe(render(text, schema));
        Statements {
            stage: sql(include_str!("sql/outbox_stage.sql")),
            claim: sql(include_str!("sql/outbox_claim.sql")),
            published: sql(include_str!("sql/outbox_published.sql")),
            published_then_claim: sql(include_str!("sql/outbox_published_then_claim.sql")),
            release: sql(include_str!("sql/outbox_release.sql")),
            refused: sql(include_str!("sql/outbox_refused.sql")),
            stats: sql(include_str!("sql/outbox_stats.sql")),
            purge: sql(include_str!("sql/outbox_purge.sql")),
        }
    }
}

/// The transactional outbox in a Postgres database: the app's own (where the business rows
/// are), whichever store runs the jobs.
///
/// ```no_run
/// # use jobs::prelude::*;
/// # #[derive(Serialize, Deserialize, JsonSchema)] struct Signup { user_id: u64 }
/// # #[job(key = "welcome:{user_id}", tenant = none)]
/// # async fn send_welcome(_run: Run, _input: Signup) -> Result<(), JobError> { Ok(()) }
/// # async fn demo(app: jobs::sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
/// use jobs::driver::postgres::PostgresOutbox;
/// use jobs::outbox::{OutboxMode, OutboxRelay};
///
/// let outbox = PostgresOutbox::new(app.clone(), "public")?;
/// outbox.install().await?; // creates x_outbox if missing
/// let jobs = Jobs::open("redis://127.0.0.1/").await?.with_outbox(outbox.clone(), OutboxMode::Required);
/// let relay = OutboxRelay::builder(outbox, &jobs).build()?.start();
///
/// let mut tx = app.begin().await?;
/// // ... the app's own writes on `tx` ...
/// SendWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id: 7 }).await?;
/// tx.commit().await?; // the job is published after this, and only if it commits
/// # relay.stop(std::time::Duration::from_secs(5)).await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PostgresOutbox {
    pool: PgPool,
    schema: Arc<str>,
    channel: Arc<str>,
    sql: Arc<Statements>,
}

impl PostgresOutbox {
    /// The outbox in `schema` of the database `pool` connects to (a plain lower-case
    /// identifier; `X_DRIVER_URL_INVALID` otherwise). Stages run on the caller's connection;
    /// the relay's claims, marks and reads run on `pool`.
    pub fn new(pool: PgPool, schema: &str) -> Result<Self, JobError> {
        check_schema(schema)?;
        Ok(PostgresOutbox {
            pool,
            schema: schema.into(),
            channel: channel(schema).into(),
            sql: Arc::new(Statements::new(schema)),
        })
    }

    /// The outbox beside a Postgres job store, in its database and schema (its migrations
    /// create `x_outbox`).
    pub fn of(driver: &super::PostgresDriver) -> Self {
        Self::new(driver.pool().clone(), driver.schema())
            .expect("a driver's schema was checked when it was built")
    }

    /// Creates the schema, `x_outbox` and its lease row's table when missing (the DDL of the
    /// jobs' migrations 23, 25, 27 and 32):
    /// for an app database apart from the job store's. Idempotent; safe from several processes
    /// at once.
    pub async fn install(&self) -> Result<(), JobError> {
        let failed = |e| classify(Op::OutboxInstall, e);
        let mut tx = super::pooled::begin(&self.pool).await.map_err(failed)?;
        sqlx::query("select pg_advisory_xact_lock(hashtext($1))")
            .bind(format!("jobs.outbox.install:{}", self.schema))
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        let ddl = format!("create schema if not exists {{schema}};\n{DDL}");
        sqlx::raw_sql(safe(render(&ddl, &self.schema)))
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        tx.commit().await.map_err(failed)
    }
}

/// The wake channel of a schema's outbox.
fn channel(schema: &str) -> String {
    format!("x_outbox_wake:{schema}")
}

#[async_trait]
impl OutboxStore for PostgresOutbox {
    fn name(&self) -> &'static str {
        "postgres"
    }

    async fn outbox_stage(
        &self,
        conn: CallerConn<'_>,
        request: &EnqueueRequest,
    ) -> Result<(), JobError> {
        let conn = conn
            .downcast_mut::<PgConnection>()
            .ok_or_else(|| foreign_connection("postgres outbox", "PgConnection"))?;
        let failed = |e| classify(Op::OutboxStage, e);
        job_query(self.sql.stage.clone(), request)
            .map_err(failed)?
            .bind(request.run_at)
            .bind(request.on_conflict.as_str())
            .bind(&request.traceparent)
            .bind(&request.actor)
            .bind(request.now)
            .bind(&*self.channel)
            .bind(request.priority)
            .bind(request.unique_for_ms())
            .execute(conn)
            .await
            .map_err(failed)?;
        Ok(())
    }

    async fn outbox_claim(
        &self,
        params: &OutboxClaimParams,
    ) -> Result<Vec<OutboxRecord>, JobError> {
        let after = params
            .after
            .unwrap_or_else(OutboxClaimParams::start_of_time);
        let records: Vec<OutboxRecord> = sqlx::query_as(self.sql.claim.clone())
            .bind(&params.holder)
            .bind(i64::try_from(params.limit).unwrap_or(i64::MAX))
            .bind(params.now)
            .bind(params.live_after())
            .bind(after.0)
            .bind(after.1)
            .bind(params.after.is_some())
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::OutboxClaim, e))?;
        Ok(records)
    }

    async fn outbox_published(
        &self,
        settle: &OutboxSettle<'_>,
        rows: &[OutboxPublished],
    ) -> Result<u64, JobError> {
        let (ids, deduped) = OutboxPublished::ids_and_deduped(rows);
        let done = sqlx::query(self.sql.published.clone())
            .bind(settle.holder)
            .bind(&ids)
            .bind(&deduped)
            .bind(settle.now)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::OutboxPublished, e))?;
        Ok(done.rows_affected())
    }

    async fn outbox_published_then_claim(
        &self,
        settle: &OutboxSettle<'_>,
        rows: &[OutboxPublished],
        claim: &OutboxClaimParams,
    ) -> Result<Vec<OutboxRecord>, JobError> {
        let Some(after) = claim.after else {
            // From the head: the claim's own statement, which judges the lease by its snapshot.
            return published_then_claim_in_two(self, settle, rows, claim).await;
        };
        let (ids, deduped) = OutboxPublished::ids_and_deduped(rows);
        sqlx::query_as(self.sql.published_then_claim.clone())
            .bind(settle.holder)
            .bind(i64::try_from(claim.limit).unwrap_or(i64::MAX))
            .bind(claim.now)
            .bind(&ids)
            .bind(after.0)
            .bind(after.1)
            .bind(&deduped)
            .bind(settle.now)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::OutboxClaim, e))
    }

    async fn outbox_release(
        &self,
        settle: &OutboxSettle<'_>,
        ids: &[JobId],
        failed: Option<(JobId, &str)>,
    ) -> Result<u64, JobError> {
        let done = sqlx::query(self.sql.release.clone())
            .bind(settle.holder)
            .bind(ids)
            .bind(failed.map(|(id, _)| id))
            .bind(failed.map(|(_, code)| code))
            .bind(settle.now)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::OutboxRelease, e))?;
        Ok(done.rows_affected())
    }

    async fn outbox_refused(
        &self,
        settle: &OutboxSettle<'_>,
        id: JobId,
        code: &str,
    ) -> Result<u64, JobError> {
        let done = sqlx::query(self.sql.refused.clone())
            .bind(settle.holder)
            .bind(id)
            .bind(code)
            .bind(settle.now)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::OutboxRefused, e))?;
        Ok(done.rows_affected())
    }

    async fn outbox_stats(&self) -> Result<OutboxStats, JobError> {
        let failed = |e| classify(Op::OutboxStats, e);
        let row = sqlx::query(self.sql.stats.clone())
            .fetch_one(&self.pool)
            .await
            .map_err(failed)?;
        let count = |name: &str| -> Result<u64, JobError> {
            let n: i64 = row.try_get(name).map_err(failed)?;
            Ok(n.max(0) as u64)
        };
        Ok(OutboxStats {
            backlog: count("backlog")?,
            oldest_staged_at: row.try_get("oldest_staged_at").map_err(failed)?,
            failing: count("failing")?,
            last_error_code: row.try_get("last_error_code").map_err(failed)?,
            refused: count("refused")?,
            published: count("published")?,
            lease: OutboxLease::of(
                row.try_get("lease_holder").map_err(failed)?,
                row.try_get("lease_claimed_at").map_err(failed)?,
            ),
        })
    }

    async fn outbox_purge(&self, before: Timestamp, limit: u32) -> Result<u64, JobError> {
        let done = sqlx::query(self.sql.purge.clone())
            .bind(before)
            .bind(i64::from(limit))
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::OutboxPurge, e))?;
        Ok(done.rows_affected())
    }

    async fn outbox_wake(&self) -> Result<Option<WakeReceiver>, JobError> {
        Ok(Some(wake::spawn(
            self.pool.clone(),
            self.channel.to_string(),
        )))
    }
}
