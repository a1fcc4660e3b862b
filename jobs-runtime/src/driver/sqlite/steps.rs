//! Step records: one read per attempt, and fenced writes.

use super::writer::Writer;
use sqlx::sqlite::SqlitePool;
use sqlx::FromRow;

use super::classify::{classify, Op};
use super::time::ts;
use crate::driver::records::*;
use crate::driver::StepPutParams;
use crate::error::{ErrorCode, JobError};

pub(crate) async fn list(reader: &SqlitePool, run_id: RunId) -> Result<Vec<StepRecord>, JobError> {
    let failed = |e| classify(Op::StepList, e);
    let rows = sqlx::query(
        "select run_id, name, status, output, error, attempts, wake_at, wait, updated_at
         from x_job_steps where run_id = ?1",
    )
    .bind(run_id)
    .fetch_all(reader)
    .await
    .map_err(failed)?;
    rows.iter()
        .map(|r| StepRecord::from_row(r).map_err(failed))
        .collect()
}

/// Writes the record only while the fence's claim still holds the job; `false` otherwise.
pub(crate) async fn put(writer: &Writer, params: &StepPutParams<'_>) -> Result<bool, JobError> {
    let StepPutParams { record, fence } = *params;
    let wait = record
        .wait
        .as_ref()
        .map(serde_json::to_value)
        .transpose()
        .map_err(|_| JobError::new(ErrorCode::StepRecordInvalid, "a wait did not serialize"))?;
    let done = sqlx::query(
        "insert into x_job_steps (run_id, name, status, output, error, attempts, wake_at, wait, updated_at)
         select ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9
         where exists (
             select 1 from x_jobs
             where id = ?10 and state = 'running' and claimed_by = ?11 and claims = ?12
         )
         on conflict (run_id, name) do update
         set status = excluded.status,
             output = excluded.output,
             error = excluded.error,
             attempts = excluded.attempts,
             wake_at = excluded.wake_at,
             wait = excluded.wait,
             updated_at = excluded.updated_at",
    )
    .bind(record.run_id)
    .bind(&record.name)
    .bind(record.status.as_str())
    .bind(&record.output)
    .bind(&record.error)
    .bind(i64::from(record.attempts))
    .bind(ts(record.wake_at))
    .bind(wait)
    .bind(ts(record.updated_at))
    .bind(fence.job_id)
    .bind(&fence.by.worker_id)
    .bind(fence.by.claim)
    .execute(&mut *writer.acquire(Op::StepPut).await?)
    .await
    .map_err(|e| classify(Op::StepPut, e))?;
    Ok(done.rows_affected() == 1)
}
