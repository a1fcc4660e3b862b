//! The SQLite [`LedgerBook`] (table `x_ledger_lines`): the driver is its own book, and
//! [`SqliteBook`] is the same book on a pool of the app's own. A posting runs in one
//! `BEGIN IMMEDIATE` transaction, where Postgres relies on the insert's row locks.

use async_trait::async_trait;
use sqlx::sqlite::{SqliteConnection, SqlitePool, SqliteRow};
use sqlx::{Connection, Row};

use super::backfill::tenant_column;
use super::classify::{classify, Op};
use super::time::ts;
use super::SqliteDriver;
use crate::driver::ledger_book::{
    posting_conflict, LedgerBook, LedgerLine, PostingLinesParams, PostingWrite, PostingWritten,
};
use crate::error::JobError;

fn line(row: &SqliteRow) -> Result<LedgerLine, JobError> {
    let d = |e| classify(Op::DecodeLedgerLine, e);
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
    let failed = |e| classify(Op::LedgerInsert, e);
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
        .map_err(|e| classify(Op::LedgerLines, e))?
        .iter()
        .map(line)
        .collect::<Result<Vec<_>, _>>()?;
    if stored != w.lines {
        tx.rollback()
            .await
            .map_err(|e| classify(Op::LedgerInsertRollback, e))?;
        // What was stored before this write: the read-back minus what it inserted.
        let before = stored.len().saturating_sub(inserted as usize);
        return Err(posting_conflict(&w.ledger, before, w.lines.len()));
    }
    tx.commit()
        .await
        .map_err(|e| classify(Op::LedgerInsertCommit, e))?;
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
        .map_err(|e| classify(Op::LedgerLines, e))?
        .iter()
        .map(line)
        .collect()
}

#[async_trait]
impl LedgerBook for SqliteDriver {
    async fn posting_write(&self, write: &PostingWrite) -> Result<PostingWritten, JobError> {
        let mut conn = self.writer.acquire(Op::LedgerInsert).await?;
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
            .map_err(|e| classify(Op::LedgerInsert, e))?;
        posting_write(&mut conn, write).await
    }

    async fn posting_lines(&self, p: &PostingLinesParams) -> Result<Vec<LedgerLine>, JobError> {
        posting_lines(&self.pool, p).await
    }
}
