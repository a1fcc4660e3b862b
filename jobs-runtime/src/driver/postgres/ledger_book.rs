//! The Postgres [`LedgerBook`] (table `x_ledger_lines`): the driver is its own book, and
//! [`PostgresBook`] is the same book over a pool of the app's own. Short adapters over the
//! `ledger_*` statements.

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::Row;

use super::backfill::tenant_column;
use super::classify::{classify, Op};
use super::PostgresDriver;
use crate::driver::ledger_book::{
    posting_conflict, LedgerBook, LedgerLine, PostingLinesParams, PostingWrite, PostingWritten,
};
use crate::error::JobError;

fn line(row: &PgRow) -> Result<LedgerLine, JobError> {
    let d = |e| classify(Op::DecodeLedgerLine, e);
    let line: i32 = row.try_get("line").map_err(d)?;
    let scale: Option<i16> = row.try_get("scale").map_err(d)?;
    Ok(LedgerLine {
        line: u32::try_from(line).unwrap_or(0),
        account: row.try_get("account").map_err(d)?,
        minor: row.try_get("minor").map_err(d)?,
        currency: row.try_get("currency").map_err(d)?,
        scale: scale.and_then(|s| u8::try_from(s).ok()),
    })
}

#[async_trait]
impl LedgerBook for PostgresDriver {
    /// One transaction: `insert ... on conflict do nothing`, then the read-back. Lines that
    /// differ from the stored ones roll the insert back and answer `X_LEDGER_POSTING_CONFLICT`.
    async fn posting_write(&self, w: &PostingWrite) -> Result<PostingWritten, JobError> {
        let tenant = tenant_column(w.tenant.as_deref());
        let lines: Vec<i32> = w
            .lines
            .iter()
            .map(|l| i32::try_from(l.line).unwrap_or(i32::MAX))
            .collect();
        let accounts: Vec<&str> = w.lines.iter().map(|l| l.account.as_str()).collect();
        let minors: Vec<i64> = w.lines.iter().map(|l| l.minor).collect();
        let currencies: Vec<&str> = w.lines.iter().map(|l| l.currency.as_str()).collect();
        let scales: Vec<Option<i16>> = w.lines.iter().map(|l| l.scale.map(i16::from)).collect();
        let mut tx = super::pooled::begin(self.pool())
            .await
            .map_err(|e| classify(Op::LedgerInsert, e))?;
        let inserted = sqlx::query(self.sql.ledger_insert.clone())
            .bind(&w.ledger)
            .bind(tenant)
            .bind(&w.key)
            .bind(&lines)
            .bind(&accounts)
            .bind(&minors)
            .bind(&currencies)
            .bind(&scales)
            .bind(w.run_id)
            .bind(w.now)
            .execute(&mut *tx)
            .await
            .map_err(|e| classify(Op::LedgerInsert, e))?
            .rows_affected();
        let stored = sqlx::query(self.sql.ledger_lines.clone())
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

    async fn posting_lines(&self, p: &PostingLinesParams) -> Result<Vec<LedgerLine>, JobError> {
        sqlx::query(self.sql.ledger_lines.clone())
            .bind(&p.ledger)
            .bind(tenant_column(p.tenant.as_deref()))
            .bind(&p.key)
            .fetch_all(self.pool())
            .await
            .map_err(|e| classify(Op::LedgerLines, e))?
            .iter()
            .map(line)
            .collect()
    }
}

/// The Postgres [`LedgerBook`] on its own: the `x_ledger_lines` table of a migrated schema,
/// for an app that writes postings through a pool of its own. A driver is also its own book
/// (`#[ledger(book = driver)]`).
///
/// ```no_run
/// # async fn demo(pool: jobs::sqlx::PgPool) -> Result<(), jobs::JobError> {
/// let book = jobs::driver::PostgresBook::new(pool, "public")?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PostgresBook {
    driver: PostgresDriver,
}

impl PostgresBook {
    /// The book in `schema` (migrated with [`PostgresDriver::migrate`]).
    pub fn new(pool: sqlx::PgPool, schema: &str) -> Result<Self, JobError> {
        Ok(PostgresBook {
            driver: PostgresDriver::new(pool, schema)?,
        })
    }
}

#[async_trait]
impl LedgerBook for PostgresBook {
    async fn posting_write(&self, write: &PostingWrite) -> Result<PostingWritten, JobError> {
        self.driver.posting_write(write).await
    }

    async fn posting_lines(&self, p: &PostingLinesParams) -> Result<Vec<LedgerLine>, JobError> {
        self.driver.posting_lines(p).await
    }
}
