//! The outbox on SQLite ([`SqliteOutbox`]): `x_outbox` in the app's file, staged on the caller's
//! transaction. SQLite has one writer at a time, so the relay's claim needs no lock of its own:
//! it reads and takes the lease row `x_outbox_lease` in a `BEGIN IMMEDIATE` transaction no
//! other writer can interleave. The wake is the
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

/// The outbox's DDL: the SQLite migrations 7 and 15 (the relay's lease row), which
/// [`SqliteOutbox::install`] also runs.
const DDL: &str = concat!(
    include_str!("../../../migrations/sqlite/0007_outbox.sql"),
    "\n",
    include_str!("../../../migrations/sqlite/0015_outbox_lease.sql")
);

const STAGE: &str = "insert into x_outbox (id, run_id, name, queue, input, idempotency_key,
        tenant_id, max_attempts, run_at, on_conflict, traceparent, actor, staged_at, priority,
        unique_for_ms)
    values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";

/// Whether `x_outbox` has a column (?1).
const HAS_COLUMN: &str = "select count(*) from pragma_table_info('x_outbox') where name = ?1";

/// The columns added to `x_outbox` after migration 7, each with its `alter table`: a job's
/// priority and its unique period in milliseconds, carried to the job store by the relay, and
/// the relay that published the row (the audit trail's, since migration 15).
const ADDED_COLUMNS: &[(&str, &str)] = &[
    (
        "priority",
        "alter table x_outbox add column priority integer not null default 0",
    ),
    (
        "unique_for_ms",
        "alter table x_outbox add column unique_for_ms integer",
    ),
    (
        "published_by",
        "alter table x_outbox add column published_by text",
    ),
];

/// The per-row holder columns of `x_outbox` before migration 15 (the lease row took their
/// place), each with its `alter table`.
const RETIRED_COLUMNS: &[(&str, &str)] = &[
    ("claimed_by", "alter table x_outbox drop column claimed_by"),
    ("claimed_at", "alter table x_outbox drop column claimed_at"),
];

/// Adds the columns of `x_outbox` that came after migration 7 when missing, and drops those
/// migration 15 retired when present: SQLite has no `add column if not exists`, so the job
/// store's migrations and [`SqliteOutbox::install`] both come here, in whichever order.
pub(crate) async fn ensure_columns(conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
    for (column, add) in ADDED_COLUMNS {
        if !has_column(conn, column).await? {
            sqlx::query(*add).execute(&mut *conn).await?;
        }
    }
    for (column, drop) in RETIRED_COLUMNS {
        if has_column(conn, column).await? {
            sqlx::query(*drop).execute(&mut *conn).await?;
        }
    }
    Ok(())
}

async fn has_column(conn: &mut SqliteConnection, column: &str) -> Result<bool, sqlx::Error> {
    let has: i64 = sqlx::query_scalar(HAS_COLUMN)
        .bind(column)
        .fetch_one(&mut *conn)
        .await?;
    Ok(has > 0)
}

/// The outbox's lease: who holds the head and since when (in the claim's `BEGIN IMMEDIATE`).
const LEASE: &str = "select claimed_by, claimed_at from x_outbox_lease where id = 1";

/// The outbox's rows after (?2, ?3) in (staged_at, id) order: the head (a position before
/// every row), or the rows after the holder's batches awaiting their marks.
const HEAD: &str = "select id, run_id, name, queue, input, idempotency_key, tenant_id,
        max_attempts, run_at, on_conflict, traceparent, actor, staged_at, publish_attempts,
        priority, unique_for_ms
    from x_outbox
    where published_at is null and refused_at is null
      and (staged_at, id) > (?2, ?3)
    order by staged_at, id
    limit ?1";

/// Takes the lease for ?1 at ?2, with the last row taken (?3, ?4; kept when null).
const HOLD: &str =
    "insert into x_outbox_lease (id, claimed_by, claimed_at, last_staged_at, last_id)
    values (1, ?1, ?2, ?3, ?4)
    on conflict (id) do update
    set claimed_by = excluded.claimed_by, claimed_at = excluded.claimed_at,
        last_staged_at = coalesce(excluded.last_staged_at, last_staged_at),
        last_id = coalesce(excluded.last_id, last_id)";

/// Frees the lease if ?1 holds it.
const FREE: &str = "update x_outbox_lease set claimed_by = null, claimed_at = null
    where id = 1 and claimed_by = ?1";

/// The fence of every mark: ?1 holds the lease.
macro_rules! holds {
    () => {
        "exists (select 1 from x_outbox_lease where id = 1 and claimed_by = ?1)"
    };
}

/// ?2 and ?4 are JSON arrays of hex ids: the rows, and those the job store already held. The
/// rows are found by their primary key (the unsettled test does not match the pending index's
/// predicate, so no plan walks the backlog filtering on the ids).
const PUBLISHED: &str = concat!(
    "update x_outbox
    set published_at = ?3, published_by = ?1,
        deduped = (id in (select unhex(value) from json_each(?4)))
    where coalesce(published_at, refused_at) is null
      and id in (select unhex(value) from json_each(?2)) and ",
    holds!()
);

/// ?2 is a JSON array of hex ids; ?3 the row whose publish failed (or null), ?4 its code. Run
/// before [`FREE`], in one transaction.
const RELEASE: &str = concat!(
    "update x_outbox
    set publish_attempts = publish_attempts + case when id = ?3 then 1 else 0 end,
        last_error_code = case when id = ?3 then ?4 else last_error_code end,
        last_error_at = case when id = ?3 then ?5 else last_error_at end
    where coalesce(published_at, refused_at) is null
      and id in (select unhex(value) from json_each(?2)) and ",
    holds!()
);

const REFUSED: &str = concat!(
    "update x_outbox
    set refused_at = ?4, last_error_code = ?3, last_error_at = ?4
    where id = ?2 and published_at is null and refused_at is null and ",
    holds!()
);

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
    (select count(*) from x_outbox where published_at is not null) as published,
    (select claimed_by from x_outbox_lease where id = 1) as lease_holder,
    (select claimed_at from x_outbox_lease where id = 1) as lease_claimed_at";

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

/// The outbox's lease, its holder and when it was taken, as the write transaction sees it.
async fn lease_of(
    tx: &mut sqlx::SqliteConnection,
) -> Result<Option<(Option<String>, Option<Timestamp>)>, JobError> {
    sqlx::query_as(LEASE)
        .fetch_optional(tx)
        .await
        .map_err(|e| classify(Op::OutboxClaim, e))
}

/// The rows after `after` a claim takes, in its write transaction.
async fn head(
    tx: &mut sqlx::SqliteConnection,
    params: &OutboxClaimParams,
    after: (Timestamp, JobId),
) -> Result<Vec<OutboxRecord>, JobError> {
    sqlx::query_as(HEAD)
        .bind(i64::try_from(params.limit).unwrap_or(i64::MAX))
        .bind(ts(after.0))
        .bind(after.1)
        .fetch_all(tx)
        .await
        .map_err(|e| classify(Op::OutboxClaim, e))
}

/// Takes the lease for the claim's holder, noting the last of `records` (if any).
async fn hold(
    tx: &mut sqlx::SqliteConnection,
    params: &OutboxClaimParams,
    records: &[OutboxRecord],
) -> Result<(), JobError> {
    let last = records.last();
    sqlx::query(HOLD)
        .bind(&params.holder)
        .bind(ts(params.now))
        .bind(last.map(|r| ts(r.staged_at())))
        .bind(last.map(|r| r.request.id))
        .execute(tx)
        .await
        .map_err(|e| classify(Op::OutboxClaim, e))?;
    Ok(())
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
        let mut conn = self.pool.acquire().await.map_err(failed)?;
        // The write lock makes claims take turns: each sees the lease the last one left.
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
        let lease = lease_of(&mut tx).await?;
        if let Some((Some(by), Some(at))) = lease {
            if by != params.holder && at > params.live_after() {
                return Ok(Vec::new());
            }
        }
        let after = params
            .after
            .unwrap_or_else(OutboxClaimParams::start_of_time);
        let records = head(&mut tx, params, after).await?;
        // A claim from the head that finds nothing frees the lease; one after the holder's
        // position keeps it even then (its batches still await their marks).
        if records.is_empty() && params.after.is_none() {
            sqlx::query(FREE)
                .bind(&params.holder)
                .execute(&mut *tx)
                .await
                .map_err(failed)?;
        } else {
            hold(&mut tx, params, &records).await?;
        }
        tx.commit().await.map_err(failed)?;
        Ok(records)
    }

    async fn outbox_published(
        &self,
        settle: &OutboxSettle<'_>,
        rows: &[OutboxPublished],
    ) -> Result<u64, JobError> {
        let (ids, deduped) = OutboxPublished::ids_and_deduped(rows);
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

    /// The mark and the claim in one write transaction (one commit, not two), while the
    /// holder holds the lease.
    async fn outbox_published_then_claim(
        &self,
        settle: &OutboxSettle<'_>,
        rows: &[OutboxPublished],
        claim: &OutboxClaimParams,
    ) -> Result<Vec<OutboxRecord>, JobError> {
        let Some(after) = claim.after else {
            return published_then_claim_in_two(self, settle, rows, claim).await;
        };
        let failed = |e| classify(Op::OutboxClaim, e);
        let mut conn = self.pool.acquire().await.map_err(failed)?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
        let lease = lease_of(&mut tx).await?;
        if !matches!(lease, Some((Some(by), _)) if by == claim.holder) {
            return Ok(Vec::new());
        }
        let (ids, deduped) = OutboxPublished::ids_and_deduped(rows);
        sqlx::query(PUBLISHED)
            .bind(settle.holder)
            .bind(hex_ids(&ids))
            .bind(ts(settle.now))
            .bind(hex_ids(&deduped))
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        let records = head(&mut tx, claim, after).await?;
        hold(&mut tx, claim, &records).await?;
        tx.commit().await.map_err(failed)?;
        Ok(records)
    }

    async fn outbox_release(
        &self,
        settle: &OutboxSettle<'_>,
        ids: &[JobId],
        failed: Option<(JobId, &str)>,
    ) -> Result<u64, JobError> {
        let failed_to = |e| classify(Op::OutboxRelease, e);
        let mut conn = self.pool.acquire().await.map_err(failed_to)?;
        let mut tx = conn
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(failed_to)?;
        let done = sqlx::query(RELEASE)
            .bind(settle.holder)
            .bind(hex_ids(ids))
            .bind(failed.map(|(id, _)| id))
            .bind(failed.map(|(_, code)| code))
            .bind(ts(settle.now))
            .execute(&mut *tx)
            .await
            .map_err(failed_to)?;
        sqlx::query(FREE)
            .bind(settle.holder)
            .execute(&mut *tx)
            .await
            .map_err(failed_to)?;
        tx.commit().await.map_err(failed_to)?;
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
        type Stats = (
            i64,
            Option<Timestamp>,
            i64,
            Option<String>,
            i64,
            i64,
            Option<String>,
            Option<Timestamp>,
        );
        let (backlog, oldest_staged_at, failing, last_error_code, refused, published, holder, at): Stats =
            sqlx::query_as(STATS)
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
            lease: OutboxLease::of(holder, at),
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
