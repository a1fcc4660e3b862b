//! The SQLite [`BackfillStore`] (table `x_backfills`): the Postgres `backfill_*` statements in
//! SQLite's terms.
//!
//! Where Postgres takes an advisory lock per name and tenant (a pass's begin), this runs in one
//! `BEGIN IMMEDIATE` transaction: the check and the write happen under the database's write
//! lock, which no other writer interleaves.

use async_trait::async_trait;
use sqlx::sqlite::SqliteRow;
use sqlx::{Connection, Row};

use super::classify::{classify, Op};
use super::time::ts;
use super::SqliteDriver;
use crate::driver::backfill_store::*;
use crate::error::JobError;

pub(super) fn tenant_column(tenant: Option<&str>) -> &str {
    tenant.unwrap_or_default()
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn pass(row: &SqliteRow) -> Result<BackfillPass, JobError> {
    let d = |e| classify(Op::DecodeBackfillRow, e);
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
        let failed = |e| classify(Op::BackfillBegin, e);
        let tenant = tenant_column(p.tenant.as_deref());
        let mut conn = self.writer.acquire(Op::BackfillBegin).await?;
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
            .map_err(|e| classify(Op::BackfillBeginCommit, e))?;
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
        .execute(&mut *self.writer.acquire(Op::BackfillProgress).await?)
        .await
        .map_err(|e| classify(Op::BackfillProgress, e))?;
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
        .execute(&mut *self.writer.acquire(Op::BackfillFinish).await?)
        .await
        .map_err(|e| classify(Op::BackfillFinish, e))?;
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
        .map_err(|e| classify(Op::BackfillList, e))?;
        rows.iter().map(pass).collect()
    }

    async fn backfill_migration_applied(&self, version: i64) -> Result<bool, JobError> {
        let op = |e| classify(Op::BackfillMigrationApplied, e);
        // sqlx's own table, when the app migrates with sqlx; none: nothing is applied.
        let table: Option<String> = sqlx::query_scalar(
            "select name from sqlite_master where type = 'table' and name = '_sqlx_migrations'",
        )
        .fetch_optional(&self.reader)
        .await
        .map_err(op)?;
        if table.is_none() {
            return Ok(false);
        }
        sqlx::query_scalar(
            "select exists(select 1 from _sqlx_migrations where version = ?1 and success)",
        )
        .bind(version)
        .fetch_one(&self.reader)
        .await
        .map_err(op)
    }
}
