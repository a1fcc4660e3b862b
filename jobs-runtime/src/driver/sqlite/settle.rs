//! Settling writes (ack, nack, heartbeat, progress), each fenced on the claim: the row must
//! still be `running` under the same worker and claim ordinal, otherwise the write lands
//! nowhere and answers `false`. The operator counters move in the same statement, through the
//! `x_job_counters_count` trigger. And the cancel, which commits with its history row and with
//! the cancel of its live children, and theirs (`groups.rs`).

use super::writer::Writer;

use sqlx::{Connection, FromRow};

use super::classify::{classify, Op};
use super::introspect::history;
use super::job_columns;
use super::time::ts;
use crate::clock::add;
use crate::driver::introspect::JobVerb;
use crate::driver::records::*;
use crate::error::{ErrorCode, JobError};

/// ?5: the result the job keeps (`keep_result`) as JSON text, null for none, written by the
/// fenced statement itself, so an ack that does not land keeps nothing.
const ACK: &str = "update x_jobs
    set state = 'done', visible_at = null, updated_at = ?4,
        last_error = null, last_error_code = null, result = ?5
    where id = ?1 and state = 'running' and claimed_by = ?2 and claims = ?3
    returning has_dependents";

pub(crate) async fn ack(writer: &Writer, p: &AckParams) -> Result<bool, JobError> {
    let has_dependents: Option<bool> = sqlx::query_scalar(ACK)
        .bind(p.job_id)
        .bind(&p.by.worker_id)
        .bind(p.by.claim)
        .bind(ts(p.now))
        .bind(p.result.as_ref().map(serde_json::Value::to_string))
        .fetch_optional(&mut *writer.acquire(Op::JobAck).await?)
        .await
        .map_err(|e| classify(Op::JobAck, e))?;
    settled(writer, has_dependents, p.now).await
}

/// Whether a settle landed (its one row's `has_dependents`), running the release pass first
/// when the job it ended has dependents.
async fn settled(
    writer: &Writer,
    has_dependents: Option<bool>,
    now: crate::clock::Timestamp,
) -> Result<bool, JobError> {
    if has_dependents == Some(true) {
        super::dependencies::release_after(writer, now).await;
    }
    Ok(has_dependents.is_some())
}

/// Many acks in one statement (one commit, one round trip to the connection's thread), each
/// fenced on its own claim: the batch travels as a JSON array of `[id hex, worker, claim,
/// result]`, the result the JSON text the job keeps (null: none).
const ACK_MANY: &str = "with acks(id, worker, claims, result) as (
        select unhex(value ->> 0), value ->> 1, value ->> 2, value ->> 3 from json_each(?1)
    )
    update x_jobs
    set state = 'done', visible_at = null, updated_at = ?2,
        last_error = null, last_error_code = null, result = acks.result
    from acks
    where x_jobs.id = acks.id and x_jobs.state = 'running'
      and x_jobs.claimed_by = acks.worker and x_jobs.claims = acks.claims
    returning x_jobs.id, x_jobs.has_dependents";

/// Many acks in one statement, each fenced on its own claim, all stored at the batch's one
/// `now` (the latest of its acks').
pub(crate) async fn ack_many(writer: &Writer, params: &[AckParams]) -> Result<Vec<bool>, JobError> {
    let Some(now) = params.iter().map(|p| p.now).max() else {
        return Ok(Vec::new());
    };
    let batch: Vec<serde_json::Value> = params
        .iter()
        .map(|p| {
            // The result as its JSON text, a string inside the batch: `->>` hands it back as
            // the text itself.
            let result = p.result.as_ref().map(serde_json::Value::to_string);
            serde_json::json!([
                p.job_id.simple().to_string(),
                p.by.worker_id,
                p.by.claim,
                result
            ])
        })
        .collect();
    let batch = serde_json::Value::Array(batch).to_string();
    let landed: Vec<(JobId, bool)> = sqlx::query_as(ACK_MANY)
        .bind(batch)
        .bind(ts(now))
        .fetch_all(&mut *writer.acquire(Op::JobAckMany).await?)
        .await
        .map_err(|e| classify(Op::JobAckMany, e))?;
    if landed.iter().any(|(_, has_dependents)| *has_dependents) {
        super::dependencies::release_after(writer, now).await;
    }
    let landed: std::collections::HashSet<JobId> = landed.into_iter().map(|(id, _)| id).collect();
    Ok(params.iter().map(|p| landed.contains(&p.job_id)).collect())
}

pub(crate) async fn nack(writer: &Writer, p: &NackParams) -> Result<bool, JobError> {
    let has_dependents: Option<bool> = sqlx::query_scalar(
        "update x_jobs
         set state = ?4,
             attempt = case when ?5 then attempt else max(attempt - 1, 0) end,
             run_at = ?6,
             visible_at = null,
             last_error = coalesce(?7, last_error),
             last_error_code = case when ?7 is null then last_error_code else ?8 end,
             updated_at = ?9
         where id = ?1 and state = 'running' and claimed_by = ?2 and claims = ?3
         returning has_dependents and state in ('failed', 'dead')",
    )
    .bind(p.job_id)
    .bind(&p.by.worker_id)
    .bind(p.by.claim)
    .bind(p.target.state().as_str())
    .bind(p.counts_as_attempt)
    .bind(ts(p.run_at))
    .bind(&p.error)
    .bind(&p.error_code)
    .bind(ts(p.now))
    .fetch_optional(&mut *writer.acquire(Op::JobNack).await?)
    .await
    .map_err(|e| classify(Op::JobNack, e))?;
    settled(writer, has_dependents, p.now).await
}

pub(crate) async fn heartbeat(writer: &Writer, p: &HeartbeatParams) -> Result<bool, JobError> {
    let done = sqlx::query(
        "update x_jobs set visible_at = ?4, updated_at = ?5
         where id = ?1 and state = 'running' and claimed_by = ?2 and claims = ?3",
    )
    .bind(p.job_id)
    .bind(&p.by.worker_id)
    .bind(p.by.claim)
    .bind(ts(add(p.now, p.visibility_timeout)))
    .bind(ts(p.now))
    .execute(&mut *writer.acquire(Op::JobHeartbeat).await?)
    .await
    .map_err(|e| classify(Op::JobHeartbeat, e))?;
    Ok(done.rows_affected() == 1)
}

pub(crate) async fn progress(writer: &Writer, p: &ProgressParams) -> Result<bool, JobError> {
    let progress = serde_json::to_value(&p.progress).unwrap_or_default();
    let done = sqlx::query(
        "update x_jobs set progress = ?4, updated_at = ?5
         where id = ?1 and state = 'running' and claimed_by = ?2 and claims = ?3",
    )
    .bind(p.job_id)
    .bind(&p.by.worker_id)
    .bind(p.by.claim)
    .bind(progress)
    .bind(ts(p.now))
    .execute(&mut *writer.acquire(Op::JobProgress).await?)
    .await
    .map_err(|e| classify(Op::JobProgress, e))?;
    Ok(done.rows_affected() == 1)
}

pub(crate) async fn cancel(writer: &Writer, p: &JobCancelParams) -> Result<JobRecord, JobError> {
    let failed = |e| classify(Op::JobCancel, e);
    // The cancel and its history row commit together.
    let mut conn = writer.acquire(Op::JobCancel).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    let row = sqlx::query(concat!(
        "update x_jobs set state = 'cancelled', visible_at = null, updated_at = ?2
         where id = ?1 and state in ('ready', 'delayed', 'running', 'suspended')
         returning ",
        job_columns!()
    ))
    .bind(p.id)
    .bind(ts(p.now))
    .fetch_optional(&mut *tx)
    .await
    .map_err(failed)?;
    if let Some(row) = row {
        let cancelled = JobRecord::from_row(&row).map_err(failed)?;
        let actor = p.actor.as_deref();
        history::append(
            &mut tx,
            &cancelled,
            JobVerb::Cancel,
            p.reason.as_deref(),
            actor,
            p.now,
            Op::JobCancel,
        )
        .await?;
        // The jobs it invoked go with it, and theirs (groups.rs).
        super::groups::cancel_children(&mut tx, p.id, p.now, actor).await?;
        tx.commit().await.map_err(failed)?;
        return Ok(cancelled);
    }
    drop(tx);
    let message = match super::reads::get_on(&mut conn, p.id).await? {
        Some(job) => format!("job {} is {}, not live", p.id, job.state),
        None => format!("no job with id {}", p.id),
    };
    Err(JobError::new(ErrorCode::JobNotCancellable, message))
}
