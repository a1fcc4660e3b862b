//! `job_purge`: finished jobs past their cutoffs, then the history of the jobs gone and the
//! groups of waiters gone (once every member was counted), in one transaction.

use super::classify::{classify, Op};
use super::PostgresDriver;
use crate::driver::records::*;
use crate::error::JobError;

impl PostgresDriver {
    pub(super) async fn purge_jobs(&self, params: &JobPurgeParams) -> Result<u64, JobError> {
        let purge = |e| classify(Op::JobPurge, e);
        // The jobs, then the history of the jobs gone, in one transaction: job_purge.sql
        // answers only a count, so history_purge.sql finds the gone jobs' rows by their absence.
        let mut tx = super::pooled::begin(&self.pool).await.map_err(purge)?;
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
        // The groups of waiters gone, once every member of theirs was counted.
        sqlx::query(self.sql.group_purge.clone())
            .bind(i64::from(params.limit))
            .execute(&mut *tx)
            .await
            .map_err(purge)?;
        tx.commit().await.map_err(purge)?;
        Ok(u64::try_from(gone).unwrap_or(0))
    }
}
