//! The SQLite [`BackfillStore`] (table `x_backfills`) and the driver's own [`LedgerBook`]
//! (table `x_ledger_lines`), with [`SqliteBook`], the book on a pool of the app's own: the
//! Postgres `backfill_*` and `ledger_*` statements in SQLite's terms.
//!
//! Where Postgres takes an advisory lock per name and tenant (a pass's begin) or relies on the
//! insert's row locks (a posting), these run in one `BEGIN IMMEDIATE` transaction: the check
//! and the write happen under the database's write lock, which no other writer interleaves.

use async_trait::async_trait;
use sqlx::sqlite::{SqliteConnection, SqlitePool, SqliteRow};
use sqlx::{Connection, Row};

use super::classify::classify;
use super::time::ts;
use super::SqliteDriver;
use crate::driver::backfill_store::*;
use crate::driver::ledger_book::{
    posting_conflict, LedgerBook, LedgerLine, PostingLinesParams, PostingWrite, PostingWritten,
};
use crate::error::JobError;

fn tenant_column(tenant: Option<&str>) -> &str {
    tenant.unwrap_or_default()
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn pass(row: &SqliteRow) -> Result<BackfillPass, JobError> {
    let d = |e| classify("decode backfill row", e);
    let tenant: String = row.try_get("tenant_id").map_err(d)?;
    let status: String = row.try_get("status").map_err(d)?;
    let batches: i64 = row.try_get("batches").map_err(d)?;
    let rows: i64 = row.try_get("rows_processed").map_err(d)?;
    Ok(BackfillPass {
        id: row.try_get("id").map_err(d)?,
        name: row.try_get("name").map_err(d)?,
        tenant: (!tenant.is_empty()).then_some(tenant),
        run_id: row.try_get("run_id").map_err(d)?,
        job_id: row.try_get("job_id").map_err(d)?,
        checksum: row.try_get("checksum").map_err(d)?,
        status: PassStatus::parse(&status)?,
        forced: row.try_get("forced").map_err(d)?,
        batches: u64::try_from(batches).unwrap_or(0),
        rows: u64::try_from(rows).unwrap_or(0),
        last_cursor: row.try_get("last_cursor").map_err(d)?,
        started_at: row.try_get("started_at").map_err(d)?,
        updated_at: row.try_get("updated_at").map_err(d)?,
        finished_at: row.try_get("finished_at").map_err(d)?,
    })
}

#[async_trait]
impl BackfillStore for SqliteDriver {
    async fn backfill_begin(&self, p: &BackfillBeginParams) -> Result<BackfillBegin, JobError> {
        let failed = |e| classify("backfill_begin", e);
        let tenant = tenant_column(p.tenant.as_deref());
        let mut conn = self.writer.acquire("backfill_begin").await?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
        let adopted = sqlx::query_scalar::<_, i64>("select 1 from x_backfills where run_id = ?1")
            .bind(p.run_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(failed)?
            .is_some();
        let previous = sqlx::query(
            "select run_id, checksum from x_backfills
             where name = ?1 and tenant_id = ?2 and status = 'completed'
             order by finished_at desc nulls last
             limit 1",
        )
        .bind(&p.name)
        .bind(tenant)
        .fetch_optional(&mut *tx)
        .await
        .map_err(failed)?;
        let (previous_run_id, previous_checksum): (Option<uuid::Uuid>, Option<String>) =
            match &previous {
                Some(row) => (
                    Some(row.try_get("run_id").map_err(failed)?),
                    Some(row.try_get("checksum").map_err(failed)?),
                ),
                None => (None, None),
            };
        let mut inserted = false;
        if !adopted && (p.force || previous.is_none()) {
            inserted = sqlx::query(
                "insert into x_backfills
                     (id, name, tenant_id, run_id, job_id, checksum, status, forced,
                      started_at, updated_at)
                 values (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8, ?8)
                 on conflict (run_id) do nothing",
            )
            .bind(p.id)
            .bind(&p.name)
            .bind(tenant)
            .bind(p.run_id)
            .bind(p.job_id)
            .bind(&p.checksum)
            .bind(p.force)
            .bind(ts(p.now))
            .execute(&mut *tx)
            .await
            .map_err(failed)?
            .rows_affected()
                == 1;
        }
        tx.commit()
            .await
            .map_err(|e| classify("backfill_begin commit", e))?;
        Ok(match (adopted || inserted, previous_run_id) {
            (false, Some(previous_run_id)) => BackfillBegin::Skipped { previous_run_id },
            _ => BackfillBegin::Started {
                adopted,
                previous_checksum,
            },
        })
    }

    async fn backfill_progress(&self, p: &BackfillProgressParams) -> Result<(), JobError> {
        sqlx::query(
            "update x_backfills
             set batches = ?2, rows_processed = ?3, last_cursor = ?4, updated_at = ?5
             where run_id = ?1",
        )
        .bind(p.run_id)
        .bind(to_i64(p.batches))
        .bind(to_i64(p.rows))
        .bind(&p.last_cursor)
        .bind(ts(p.now))
        .execute(&mut *self.writer.acquire("backfill_progress").await?)
        .await
        .map_err(|e| classify("backfill_progress", e))?;
        Ok(())
    }

    async fn backfill_finish(&self, p: &BackfillFinishParams) -> Result<(), JobError> {
        sqlx::query(
            "update x_backfills
             set status = ?2, batches = ?3, rows_processed = ?4, last_cursor = ?5,
                 updated_at = ?6, finished_at = ?6
             where run_id = ?1",
        )
        .bind(p.run_id)
        .bind(p.status.as_str())
        .bind(to_i64(p.batches))
        .bind(to_i64(p.rows))
        .bind(&p.last_cursor)
        .bind(ts(p.now))
        .execute(&mut *self.writer.acquire("backfill_finish").await?)
        .await
        .map_err(|e| classify("backfill_finish", e))?;
        Ok(())
    }

    async fn backfill_list(&self, p: &BackfillListParams) -> Result<Vec<BackfillPass>, JobError> {
        let rows = sqlx::query(
            "select id, name, tenant_id, run_id, job_id, checksum, status, forced, batches,
                    rows_processed, last_cursor, started_at, updated_at, finished_at
             from x_backfills
             where (?1 is null or name = ?1)
               and (?2 is null or status = ?2)
               and (?3 is null or run_id = ?3)
             order by started_at desc, id desc
             limit ?4 + 0",
        )
        .bind(&p.name)
        .bind(p.status.map(PassStatus::as_str))
        .bind(p.run_id)
        .bind(i64::from(p.limit.unwrap_or(DEFAULT_BACKFILL_LIST_LIMIT)))
        .fetch_all(&self.reader)
        .await
        .map_err(|e| classify("backfill_list", e))?;
        rows.iter().map(pass).collect()
    }
}

fn line(row: &SqliteRow) -> Result<LedgerLine, JobError> {
    let d = |e| classify("decode ledger line", e);
    let line: i64 = row.try_get("line").map_err(d)?;
    let scale: Option<i64> = row.try_get("scale").map_err(d)?;
    Ok(LedgerLine {
        line: u32::try_from(line).unwrap_or(0),
        account: row.try_get("account").map_err(d)?,
        minor: row.try_get("minor").map_err(d)?,
        currency: row.try_get("currency").map_err(d)?,
        scale: scale.and_then(|s| u8::try_from(s).ok()),
    })
}

/// One posting's lines, in line order.
const LINES: &str = "select line, account, minor, currency, scale
    from x_ledger_lines
    where ledger = ?1 and tenant_id = ?2 and posting_key = ?3
    order by line";

/// One transaction: each line `insert ... on conflict do nothing`, then the read-back. Lines
/// that differ from the stored ones roll the inserts back and answer
/// `X_LEDGER_POSTING_CONFLICT`.
async fn posting_write(
    conn: &mut SqliteConnection,
    w: &PostingWrite,
) -> Result<PostingWritten, JobError> {
    let tenant = tenant_column(w.tenant.as_deref());
    let failed = |e| classify("ledger_insert", e);
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    let mut inserted = 0_u64;
    for l in &w.lines {
        inserted += sqlx::query(
            "insert into x_ledger_lines
                 (ledger, tenant_id, posting_key, line, account, minor, currency, scale,
                  run_id, posted_at)
             values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             on conflict (ledger, tenant_id, posting_key, line) do nothing",
        )
        .bind(&w.ledger)
        .bind(tenant)
        .bind(&w.key)
        .bind(i64::from(l.line))
        .bind(&l.account)
        .bind(l.minor)
        .bind(&l.currency)
        .bind(l.scale.map(i64::from))
        .bind(w.run_id)
        .bind(ts(w.now))
        .execute(&mut *tx)
        .await
        .map_err(failed)?
        .rows_affected();
    }
    let stored = sqlx::query(LINES)
        .bind(&w.ledger)
        .bind(tenant)
        .bind(&w.key)
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| classify("ledger_lines", e))?
        .iter()
        .map(line)
        .collect::<Result<Vec<_>, _>>()?;
    if stored != w.lines {
        tx.rollback()
            .await
            .map_err(|e| classify("ledger_insert rollback", e))?;
        // What was stored before this write: the read-back minus what it inserted.
        let before = stored.len().saturating_sub(inserted as usize);
        return Err(posting_conflict(&w.ledger, before, w.lines.len()));
    }
    tx.commit()
        .await
        .map_err(|e| classify("ledger_insert commit", e))?;
    Ok(if inserted == 0 {
        PostingWritten::AlreadyPosted
    } else {
        PostingWritten::Written
    })
}

async fn posting_lines(
    reader: &SqlitePool,
    p: &PostingLinesParams,
) -> Result<Vec<LedgerLine>, JobError> {
    sqlx::query(LINES)
        .bind(&p.ledger)
        .bind(tenant_column(p.tenant.as_deref()))
        .bind(&p.key)
        .fetch_all(reader)
        .await
        .map_err(|e| classify("ledger_lines", e))?
        .iter()
        .map(line)
        .collect()
}

#[async_trait]
impl LedgerBook for SqliteDriver {
    async fn posting_write(&self, write: &PostingWrite) -> Result<PostingWritten, JobError> {
        let mut conn = self.writer.acquire("ledger_insert").await?;
        posting_write(&mut conn, write).await
    }

    async fn posting_lines(&self, p: &PostingLinesParams) -> Result<Vec<LedgerLine>, JobError> {
        posting_lines(&self.reader, p).await
    }
}

/// The SQLite [`LedgerBook`] on its own: the `x_ledger_lines` table of a migrated file, for an
/// app that writes postings through a pool of its own. A driver is also its own book
/// (`#[ledger(book = driver)]`).
///
/// A posting is written in a `BEGIN IMMEDIATE` transaction: give the pool's connections a busy
/// timeout (the driver's own pools have [`DEFAULT_BUSY_TIMEOUT`](super::DEFAULT_BUSY_TIMEOUT)),
/// or a write that meets another writer fails at once with `X_DRIVER_UNAVAILABLE`.
///
/// ```no_run
/// # async fn demo() -> Result<(), jobs::JobError> {
/// let driver = jobs::driver::SqliteDriver::connect("sqlite://app.db").await?;
/// driver.migrate().await?;
/// let book = jobs::driver::SqliteBook::new(driver.pool().clone());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteBook {
    pool: SqlitePool,
}

impl SqliteBook {
    /// The book in the file behind `pool` (migrated with [`SqliteDriver::migrate`]).
    pub fn new(pool: SqlitePool) -> Self {
        SqliteBook { pool }
    }
}

#[async_trait]
impl LedgerBook for SqliteBook {
    async fn posting_write(&self, write: &PostingWrite) -> Result<PostingWritten, JobError> {
        let mut conn = self
            .pool
            .acquire()
            .await
            .map_err(|e| classify("ledger_insert", e))?;
        posting_write(&mut conn, write).await
    }

    async fn posting_lines(&self, p: &PostingLinesParams) -> Result<Vec<LedgerLine>, JobError> {
        posting_lines(&self.pool, p).await
    }
}
