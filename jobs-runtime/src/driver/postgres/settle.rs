//! The settling writes, each fenced on the claim (worker id + claim ordinal): ack (one, or a
//! batch on the pinned settle connection), nack, heartbeat, progress; and the cancel, which
//! commits with its history row and with the cancel of its live children, and theirs
//! (`groups.rs`).

use sqlx::postgres::PgConnection;

use super::classify::{classify, Op};
use super::{rows, PostgresDriver};
use crate::clock::add;
use crate::driver::introspect::JobVerb;
use crate::driver::records::*;
use crate::driver::{JobCancelParams, JobGetParams};
use crate::error::{ErrorCode, JobError};

impl PostgresDriver {
    pub(super) async fn ack(&self, params: &AckParams) -> Result<bool, JobError> {
        let query = sqlx::query(self.sql.job_ack.clone())
            .bind(params.job_id)
            .bind(&params.by.worker_id)
            .bind(params.by.claim)
            .bind(params.now)
            .bind(result_text(params));
        self.settle_fenced(Op::JobAck, query, params.now).await
    }

    pub(super) async fn ack_many(&self, params: &[AckParams]) -> Result<Vec<bool>, JobError> {
        let mut lease = self
            .pinned
            .settle
            .lease(&self.pool, !self.pool_sets_nodelay)
            .await
            .map_err(|e| classify(Op::JobAckMany, e))?;
        let result = self.ack_many_on(lease.conn(), params).await;
        lease.end(&result);
        result
    }

    async fn ack_many_on(
        &self,
        conn: &mut PgConnection,
        params: &[AckParams],
    ) -> Result<Vec<bool>, JobError> {
        let Some(now) = params.iter().map(|p| p.now).max() else {
            return Ok(Vec::new());
        };
        // Planned afresh for each batch (an unnamed statement), not once per session as the
        // other statements are (`SESSION_SETTINGS`): a plan guesses 10 ids and keeps the
        // table's size from when it was made, so one made while the table was small joins every
        // later batch to a scan of the whole table until something replans it (measured with
        // autovacuum off: a drain fell from 16,000 to 4,400 jobs/s within 2 minutes). The cost
        // is server time on every batch: parse 0.36 ms and plan 0.37 ms, beside 0.20 ms of
        // execution, for a batch of one (the statement log of one job every 50 ms). A full
        // drain's batches are large, and it did not move (12,082-12,414 jobs/s before,
        // 12,199-12,515 after); a worker whose acks trickle in one by one pays it on each.
        let landed: Vec<(JobId, bool)> = sqlx::query_as(self.sql.job_ack_many.clone())
            .persistent(false)
            .bind(params.iter().map(|p| p.job_id).collect::<Vec<_>>())
            .bind(
                params
                    .iter()
                    .map(|p| p.by.worker_id.to_string())
                    .collect::<Vec<_>>(),
            )
            .bind(params.iter().map(|p| p.by.claim).collect::<Vec<_>>())
            .bind(now)
            .bind(params.iter().map(result_text).collect::<Vec<_>>())
            .fetch_all(&mut *conn)
            .await
            .map_err(|e| classify(Op::JobAckMany, e))?;
        if landed.iter().any(|(_, has_dependents)| *has_dependents) {
            self.release_after(now).await;
        }
        let landed: std::collections::HashSet<JobId> =
            landed.into_iter().map(|(id, _)| id).collect();
        Ok(params.iter().map(|p| landed.contains(&p.job_id)).collect())
    }

    pub(super) async fn nack(&self, params: &NackParams) -> Result<bool, JobError> {
        let query = sqlx::query(self.sql.job_nack.clone())
            .bind(params.job_id)
            .bind(&params.by.worker_id)
            .bind(params.by.claim)
            .bind(params.target.state().as_str())
            .bind(params.counts_as_attempt)
            .bind(params.run_at)
            .bind(&params.error)
            .bind(&params.error_code)
            .bind(params.now)
            .bind(JobState::Running.as_str())
            .bind(&*self.wake_channel);
        let row = query
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::JobNack, e))?;
        self.settled(Op::JobNack, row, params.now).await
    }

    pub(super) async fn heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError> {
        let query = sqlx::query(self.sql.job_heartbeat.clone())
            .bind(params.job_id)
            .bind(&params.by.worker_id)
            .bind(params.by.claim)
            .bind(add(params.now, params.visibility_timeout))
            .bind(params.now);
        self.execute_fenced(Op::JobHeartbeat, query).await
    }

    pub(super) async fn progress(&self, params: &ProgressParams) -> Result<bool, JobError> {
        let progress = serde_json::to_value(&params.progress).unwrap_or_default();
        let query = sqlx::query(self.sql.job_progress.clone())
            .bind(params.job_id)
            .bind(&params.by.worker_id)
            .bind(params.by.claim)
            .bind(progress)
            .bind(params.now);
        self.execute_fenced(Op::JobProgress, query).await
    }

    pub(super) async fn cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError> {
        let (id, now) = (params.id, params.now);
        let cancel = |e| classify(Op::JobCancel, e);
        // The cancel and its history row commit together.
        let mut tx = super::pooled::begin(&self.pool).await.map_err(cancel)?;
        let row = sqlx::query(self.sql.job_cancel.clone())
            .bind(id)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await
            .map_err(cancel)?;
        if let Some(row) = row {
            let cancelled = rows::job_record(&row)?;
            sqlx::query(self.sql.history_append.clone())
                .bind(cancelled.id)
                .bind(&cancelled.tenant_id)
                .bind(now)
                .bind(&params.actor)
                .bind(JobVerb::Cancel.as_str())
                .bind(params.reason.as_deref())
                .execute(&mut *tx)
                .await
                .map_err(|e| classify(Op::HistoryAppend, e))?;
            // The jobs it invoked go with it, and theirs (groups.rs).
            self.cancel_children(&mut tx, id, now, params.actor.as_deref())
                .await?;
            tx.commit().await.map_err(cancel)?;
            // Its dependents, if any, follow it, and its cancelled children are counted in
            // their groups (a cancel is rare: no flag is read first).
            self.release_after(now).await;
            return Ok(cancelled);
        }
        drop(tx);
        let message = match self.read_job(&JobGetParams { id }).await? {
            Some(job) => format!("job {id} is {}, not live", job.state),
            None => format!("no job with id {id}"),
        };
        Err(JobError::new(ErrorCode::JobNotCancellable, message))
    }

    /// Runs a statement that changes one running row under its claim (an ack, a nack, a
    /// heartbeat, a progress note, a step write), binding the state it must be in,
    /// `'running'`, as its last parameter: the answer is whether the row matched.
    ///
    /// Why a parameter and not the constant: the constant implies the predicate of
    /// `x_jobs_lapsed_idx` (`where state = 'running'`), and the session's generic plan
    /// (`SESSION_SETTINGS`) is made once, at the statement's first use. Made while the table was
    /// small and never analyzed, that plan read the whole running-rows index with `id = $1` as a
    /// filter, and kept doing so as the table grew (under a held snapshot that index holds an
    /// entry for every claim since). With the state bound, the primary key is the only index
    /// that fits.
    /// [`PostgresDriver::execute_fenced`] for a settle that may end a job others depend on:
    /// the statement answers `has_dependents` in its one row, and the release pass runs when
    /// it is set.
    async fn settle_fenced(
        &self,
        operation: Op,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
        now: crate::clock::Timestamp,
    ) -> Result<bool, JobError> {
        let row = query
            .bind(JobState::Running.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(operation, e))?;
        self.settled(operation, row, now).await
    }

    /// Whether a settle landed (its one row), running the release pass first when the row
    /// says the job it ended has dependents.
    async fn settled(
        &self,
        operation: Op,
        row: Option<sqlx::postgres::PgRow>,
        now: crate::clock::Timestamp,
    ) -> Result<bool, JobError> {
        let Some(row) = row else {
            return Ok(false);
        };
        let has_dependents: bool =
            sqlx::Row::try_get(&row, "has_dependents").map_err(|e| classify(operation, e))?;
        if has_dependents {
            self.release_after(now).await;
        }
        Ok(true)
    }

    pub(super) async fn execute_fenced(
        &self,
        operation: Op,
        query: sqlx::query::Query<'_, sqlx::Postgres, sqlx::postgres::PgArguments>,
    ) -> Result<bool, JobError> {
        let done = query
            .bind(JobState::Running.as_str())
            .execute(&self.pool)
            .await
            .map_err(|e| classify(operation, e))?;
        Ok(done.rows_affected() == 1)
    }
}

/// An ack's kept result as the JSON text its statement casts to jsonb (`None`: no result). Text,
/// not a jsonb parameter, so the batch binds one plain `text[]` with nulls.
fn result_text(params: &AckParams) -> Option<String> {
    params.result.as_ref().map(serde_json::Value::to_string)
}
