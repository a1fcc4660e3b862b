//! The core port's reads: one job by id, the per-queue counts (`queue_stats`, and the
//! cheaper `queue_depth`), and each queue's next due time (`queue_next_due`).

use sqlx::Row;

use super::classify::{classify, Op};
use super::{rows, PostgresDriver};
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::driver::{JobGetParams, QueueStatsParams};
use crate::error::JobError;

impl PostgresDriver {
    pub(super) async fn read_job(
        &self,
        params: &JobGetParams,
    ) -> Result<Option<JobRecord>, JobError> {
        let JobGetParams { id } = *params;
        let row = sqlx::query(self.sql.job_get.clone())
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::JobGet, e))?;
        row.as_ref().map(rows::job_record).transpose()
    }

    pub(super) async fn read_queue_stats(
        &self,
        params: &QueueStatsParams,
    ) -> Result<Vec<QueueStats>, JobError> {
        self.queue_counts(self.sql.queue_stats.clone(), params.now)
            .await
    }

    pub(super) async fn read_queue_depth(
        &self,
        params: &QueueStatsParams,
    ) -> Result<Vec<QueueStats>, JobError> {
        self.queue_counts(self.sql.queue_depth.clone(), params.now)
            .await
    }

    pub(super) async fn read_next_due(
        &self,
        params: &NextDueParams,
    ) -> Result<Vec<QueueDue>, JobError> {
        let failed = |e| classify(Op::QueueNextDue, e);
        if params.queues.is_empty() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(self.sql.queue_next_due.clone())
            .bind(&params.queues)
            .bind(params.now)
            .bind(i32::try_from(NEXT_DUE_TENANTS).unwrap_or(i32::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(failed)?;
        rows.iter()
            .map(|row| {
                Ok(QueueDue {
                    queue: row.try_get("queue").map_err(failed)?,
                    at: row.try_get("at").map_err(failed)?,
                })
            })
            .collect()
    }

    /// Folds `sql`'s rows (queue, state, not_due, n, oldest_run_at) into one row per queue.
    pub(super) async fn queue_counts(
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
            stats.add(JobState::parse(&state)?, !not_due, n, oldest, now);
        }
        Ok(by_queue.into_values().collect())
    }
}
