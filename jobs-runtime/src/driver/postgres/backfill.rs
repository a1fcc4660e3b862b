//! The Postgres [`BackfillStore`] (table `x_backfills`, migration 0005): short adapters over
//! the `backfill_*` statements.

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::Row;

use super::classify::{classify, Op};
use super::PostgresDriver;
use crate::driver::backfill_store::*;
use crate::error::JobError;

pub(super) fn tenant_column(tenant: Option<&str>) -> &str {
    tenant.unwrap_or_default()
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn pass(row: &PgRow) -> Result<BackfillPass, JobError> {
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
impl BackfillStore for PostgresDriver {
    async fn backfill_begin(&self, p: &BackfillBeginParams) -> Result<BackfillBegin, JobError> {
        let tenant = tenant_column(p.tenant.as_deref());
        let mut tx = super::pooled::begin(self.pool())
            .await
            .map_err(|e| classify(Op::BackfillBegin, e))?;
        sqlx::query(self.sql.backfill_lock.clone())
            .bind(&p.name)
            .bind(tenant)
            .execute(&mut *tx)
            .await
            .map_err(|e| classify(Op::BackfillLock, e))?;
        let row = sqlx::query(self.sql.backfill_begin.clone())
            .bind(&p.name)
            .bind(tenant)
            .bind(p.run_id)
            .bind(p.id)
            .bind(p.job_id)
            .bind(&p.checksum)
            .bind(p.force)
            .bind(p.now)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| classify(Op::BackfillBegin, e))?;
        tx.commit()
            .await
            .map_err(|e| classify(Op::BackfillBeginCommit, e))?;
        let d = |e| classify(Op::BackfillBegin, e);
        let adopted: bool = row.try_get("adopted").map_err(d)?;
        let inserted: bool = row.try_get("inserted").map_err(d)?;
        let previous_run_id: Option<uuid::Uuid> = row.try_get("previous_run_id").map_err(d)?;
        let previous_checksum: Option<String> = row.try_get("previous_checksum").map_err(d)?;
        Ok(match (adopted || inserted, previous_run_id) {
            (false, Some(previous_run_id)) => BackfillBegin::Skipped { previous_run_id },
            _ => BackfillBegin::Started {
                adopted,
                previous_checksum,
            },
        })
    }

    async fn backfill_progress(&self, p: &BackfillProgressParams) -> Result<(), JobError> {
        sqlx::query(self.sql.backfill_progress.clone())
            .bind(p.run_id)
            .bind(to_i64(p.batches))
            .bind(to_i64(p.rows))
            .bind(&p.last_cursor)
            .bind(p.now)
            .execute(self.pool())
            .await
            .map_err(|e| classify(Op::BackfillProgress, e))?;
        Ok(())
    }

    async fn backfill_finish(&self, p: &BackfillFinishParams) -> Result<(), JobError> {
        sqlx::query(self.sql.backfill_finish.clone())
            .bind(p.run_id)
            .bind(p.status.as_str())
            .bind(to_i64(p.batches))
            .bind(to_i64(p.rows))
            .bind(&p.last_cursor)
            .bind(p.now)
            .execute(self.pool())
            .await
            .map_err(|e| classify(Op::BackfillFinish, e))?;
        Ok(())
    }

    async fn backfill_list(&self, p: &BackfillListParams) -> Result<Vec<BackfillPass>, JobError> {
        let rows = sqlx::query(self.sql.backfill_list.clone())
            .bind(&p.name)
            .bind(p.status.map(PassStatus::as_str))
            .bind(p.run_id)
            .bind(i64::from(p.limit.unwrap_or(DEFAULT_BACKFILL_LIST_LIMIT)))
            .fetch_all(self.pool())
            .await
            .map_err(|e| classify(Op::BackfillList, e))?;
        rows.iter().map(pass).collect()
    }

    async fn backfill_migration_applied(&self, version: i64) -> Result<bool, JobError> {
        let op = |e| classify(Op::BackfillMigrationApplied, e);
        // sqlx's own table on the search path, when the app migrates with sqlx; none: nothing
        // is applied. Two statements: the second names a table that may not exist.
        let table: bool = sqlx::query_scalar(self.sql.backfill_migrations_table.clone())
            .fetch_one(self.pool())
            .await
            .map_err(op)?;
        if !table {
            return Ok(false);
        }
        sqlx::query_scalar(self.sql.backfill_migration_applied.clone())
            .bind(version)
            .fetch_one(self.pool())
            .await
            .map_err(op)
    }
}
