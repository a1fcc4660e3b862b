//! The outbox on SQLite ([`SqliteOutbox`]): `x_outbox` in the app's file, staged on the caller's
//! transaction. SQLite has one writer at a time, so the relay's claim needs no lock of its own:
//! it runs in a `BEGIN IMMEDIATE` transaction no other writer can interleave. The wake is the
//! `data_version` watch (`wake.rs`).

use async_trait::async_trait;
use sqlx::sqlite::{SqliteConnection, SqlitePool};
use sqlx::Connection;

use super::classify::{classify, Op};
use super::time::ts;
use crate::clock::Timestamp;
use crate::driver::caller_tx::{foreign_connection, CallerConn};
use crate::driver::outbox::*;
use crate::driver::records::{EnqueueRequest, JobId};
use crate::driver::WakeReceiver;
use crate::error::JobError;

/// The outbox's DDL: the SQLite migration 7, which [`SqliteOutbox::install`] also runs.
const DDL: &str = include_str!("../../../migrations/sqlite/0007_outbox.sql");

const STAGE: &str = "insert into x_outbox (id, run_id, name, queue, input, idempotency_key,
        tenant_id, max_attempts, run_at, on_conflict, traceparent, actor, staged_at, priority,
        unique_for_ms)
    values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";

/// Whether `x_outbox` has a column (?1).
const HAS_COLUMN: &str = "select count(*) from pragma_table_info('x_outbox') where name = ?1";

/// The columns added to `x_outbox` after migration 7, each with its `alter table`: a job's
/// priority and its unique period in milliseconds, carried to the job store by the relay.
const ADDED_COLUMNS: &[(&str, &str)] = &[
    (
        "priority",
        "alter table x_outbox add column priority integer not null default 0",
    ),
    (
        "unique_for_ms",
        "alter table x_outbox add column unique_for_ms integer",
    ),
];

/// Adds the columns of `x_outbox` that came after migration 7 when missing: SQLite has no `add
/// column if not exists`, so the job store's migrations and [`SqliteOutbox::install`] both come
/// here, in whichever order.
pub(crate) async fn ensure_columns(conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
    for (column, add) in ADDED_COLUMNS {
        let has: i64 = sqlx::query_scalar(HAS_COLUMN)
            .bind(column)
            .fetch_one(&mut *conn)
            .await?;
        if has == 0 {
            sqlx::query(*add).execute(&mut *conn).await?;
        }
    }
    Ok(())
}

/// The head of the outbox in (staged_at, id) order, stamped with the holder, unless another
/// holder's claim there has not lapsed (?4: claims made after it are live), passing over the
/// rows in ?5 (a JSON array of hex ids: the holder's batch awaiting its mark).
const CLAIM: &str = "update x_outbox set claimed_by = ?1, claimed_at = ?3
    where id in (
        select id from x_outbox
        where published_at is null and refused_at is null
          and id not in (select unhex(value) from json_each(?5))
          and not exists (
              select 1 from x_outbox held
              where held.published_at is null and held.refused_at is null
                and held.claimed_by is not null and held.claimed_by <> ?1
                and held.claimed_at > ?4
          )
        order by staged_at, id
        limit ?2
    )
    returning id, run_id, name, queue, input, idempotency_key, tenant_id, max_attempts,
        run_at, on_conflict, traceparent, actor, staged_at, publish_attempts, priority,
        unique_for_ms";

/// ?2 and ?4 are JSON arrays of hex ids: the rows, and those the job store already held.
const PUBLISHED: &str = "update x_outbox
    set published_at = ?3,
        deduped = (id in (select unhex(value) from json_each(?4)))
    where claimed_by = ?1 and published_at is null and refused_at is null
      and id in (select unhex(value) from json_each(?2))";

/// ?2 is a JSON array of hex ids; ?3 the row whose publish failed (or null), ?4 its code.
const RELEASE: &str = "update x_outbox
    set claimed_by = null, claimed_at = null,
        publish_attempts = publish_attempts + case when id = ?3 then 1 else 0 end,
        last_error_code = case when id = ?3 then ?4 else last_error_code end,
        last_error_at = case when id = ?3 then ?5 else last_error_at end
    where claimed_by = ?1 and published_at is null and refused_at is null
      and id in (select unhex(value) from json_each(?2))";

const REFUSED: &str = "update x_outbox
    set refused_at = ?4, last_error_code = ?3, last_error_at = ?4
    where id = ?2 and claimed_by = ?1 and published_at is null and refused_at is null";

const STATS: &str = "select
    (select count(*) from x_outbox
        where published_at is null and refused_at is null) as backlog,
    (select min(staged_at) from x_outbox
        where published_at is null and refused_at is null) as oldest_staged_at,
    (select count(*) from x_outbox
        where published_at is null and refused_at is null and publish_attempts > 0) as failing,
    (select last_error_code from x_outbox
        where published_at is null and refused_at is null and last_error_at is not null
        order by last_error_at desc limit 1) as last_error_code,
    (select count(*) from x_outbox where refused_at is not null) as refused,
    (select count(*) from x_outbox where published_at is not null) as published";

const PURGE: &str = "delete from x_outbox
    where id in (
        select id from (select id from x_outbox where published_at < ?1
                        order by published_at limit ?2)
        union all
        select id from (select id from x_outbox where refused_at < ?1
                        order by refused_at limit ?2)
        limit ?2
    )";

/// The transactional outbox in a SQLite file: the app's own, whichever store runs the jobs.
/// Stage with `enqueue_in(&mut tx, ..)` on a transaction of that file (see
/// [`crate::outbox`]); the relay's claims, marks and reads run on `pool`.
///
/// ```no_run
/// # async fn demo(app: jobs::sqlx::SqlitePool) -> Result<(), jobs::JobError> {
/// use jobs::driver::sqlite::SqliteOutbox;
///
/// let outbox = SqliteOutbox::new(app);
/// outbox.install().await?; // creates x_outbox if missing
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteOutbox {
    pool: SqlitePool,
}

impl SqliteOutbox {
    /// The outbox in the file `pool` connects to.
    pub fn new(pool: SqlitePool) -> Self {
        SqliteOutbox { pool }
    }

    /// The outbox beside a SQLite job store, in its file (its migrations create `x_outbox`).
    pub fn of(driver: &super::SqliteDriver) -> Self {
        Self::new(driver.pool().clone())
    }

    /// Creates `x_outbox` when missing (the DDL of the SQLite migration 7, and its `priority`
    /// column): for an app file
    /// apart from the job store's. Idempotent.
    pub async fn install(&self) -> Result<(), JobError> {
        let failed = |e| classify(Op::OutboxInstall, e);
        let mut conn = self.pool.acquire().await.map_err(failed)?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
        sqlx::raw_sql(DDL).execute(&mut *tx).await.map_err(failed)?;
        ensure_columns(&mut tx).await.map_err(failed)?;
        tx.commit().await.map_err(failed)
    }
}

fn hex_ids(ids: &[JobId]) -> String {
    serde_json::Value::from(
        ids.iter()
            .map(|id| id.simple().to_string())
            .collect::<Vec<_>>(),
    )
    .to_string()
}

#[async_trait]
impl OutboxStore for SqliteOutbox {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    async fn outbox_stage(
        &self,
        conn: CallerConn<'_>,
        request: &EnqueueRequest,
    ) -> Result<(), JobError> {
        let conn = conn
            .downcast_mut::<SqliteConnection>()
            .ok_or_else(|| foreign_connection("sqlite outbox", "SqliteConnection"))?;
        super::enqueue::bind_job(sqlx::query(STAGE), request)
            .bind(ts(request.run_at))
            .bind(request.on_conflict.as_str())
            .bind(&request.traceparent)
            .bind(&request.actor)
            .bind(ts(request.now))
            .bind(request.priority)
            .bind(request.unique_for_ms())
            .execute(conn)
            .await
            .map_err(|e| classify(Op::OutboxStage, e))?;
        Ok(())
    }

    async fn outbox_claim(
        &self,
        params: &OutboxClaimParams,
    ) -> Result<Vec<OutboxRecord>, JobError> {
        let failed = |e| classify(Op::OutboxClaim, e);
        let live_after = params.live_after();
        let mut conn = self.pool.acquire().await.map_err(failed)?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
        let mut records: Vec<OutboxRecord> = sqlx::query_as(CLAIM)
            .bind(&params.holder)
            .bind(i64::try_from(params.limit).unwrap_or(i64::MAX))
            .bind(ts(params.now))
            .bind(ts(live_after))
            .bind(hex_ids(&params.skip))
            .fetch_all(&mut *tx)
            .await
            .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        // `returning` keeps no order: the relay publishes in the claim's.
        records.sort_by_key(|r| (r.request.now, r.request.id));
        Ok(records)
    }

    async fn outbox_published(
        &self,
        settle: &OutboxSettle<'_>,
        rows: &[OutboxPublished],
    ) -> Result<u64, JobError> {
        let ids: Vec<JobId> = rows.iter().map(|r| r.id).collect();
        let deduped: Vec<JobId> = rows.iter().filter(|r| r.deduped).map(|r| r.id).collect();
        let done = sqlx::query(PUBLISHED)
            .bind(settle.holder)
            .bind(hex_ids(&ids))
            .bind(ts(settle.now))
            .bind(hex_ids(&deduped))
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::OutboxPublished, e))?;
        Ok(done.rows_affected())
    }

    async fn outbox_release(
        &self,
        settle: &OutboxSettle<'_>,
        ids: &[JobId],
        failed: Option<(JobId, &str)>,
    ) -> Result<u64, JobError> {
        let done = sqlx::query(RELEASE)
            .bind(settle.holder)
            .bind(hex_ids(ids))
            .bind(failed.map(|(id, _)| id))
            .bind(failed.map(|(_, code)| code))
            .bind(ts(settle.now))
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
        let done = sqlx::query(REFUSED)
            .bind(settle.holder)
            .bind(id)
            .bind(code)
            .bind(ts(settle.now))
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::OutboxRefused, e))?;
        Ok(done.rows_affected())
    }

    async fn outbox_stats(&self) -> Result<OutboxStats, JobError> {
        let failed = |e| classify(Op::OutboxStats, e);
        let (backlog, oldest_staged_at, failing, last_error_code, refused, published): (
            i64,
            Option<Timestamp>,
            i64,
            Option<String>,
            i64,
            i64,
        ) = sqlx::query_as(STATS)
            .fetch_one(&self.pool)
            .await
            .map_err(failed)?;
        Ok(OutboxStats {
            backlog: backlog.max(0) as u64,
            oldest_staged_at,
            failing: failing.max(0) as u64,
            last_error_code,
            refused: refused.max(0) as u64,
            published: published.max(0) as u64,
        })
    }

    async fn outbox_purge(&self, before: Timestamp, limit: u32) -> Result<u64, JobError> {
        let done = sqlx::query(PURGE)
            .bind(ts(before))
            .bind(i64::from(limit))
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::OutboxPurge, e))?;
        Ok(done.rows_affected())
    }

    async fn outbox_wake(&self) -> Result<Option<WakeReceiver>, JobError> {
        Ok(Some(super::wake::listen_outbox(&self.pool).await?))
    }
}
