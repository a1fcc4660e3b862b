//! Settling writes (ack, nack, heartbeat, progress), each fenced on the claim: the row must
//! still be `running` under the same worker and claim ordinal, otherwise the write lands
//! nowhere and answers `false`. The operator counters move in the same statement, through the
//! `x_job_counters_count` trigger. Also the plain reads and writes beside them: get, cancel,
//! queue counts and the retention purge.

use super::writer::Writer;
use std::collections::BTreeMap;

use sqlx::sqlite::{SqliteConnection, SqlitePool};
use sqlx::{Connection, FromRow, Row};

use super::classify::classify;
use super::introspect::history;
use super::job_columns;
use super::time::ts;
use crate::clock::{add, Timestamp};
use crate::driver::introspect::JobVerb;
use crate::driver::records::*;
use crate::error::{ErrorCode, JobError};

const ACK: &str = "update x_jobs
    set state = 'done', visible_at = null, updated_at = ?4,
        last_error = null, last_error_code = null
    where id = ?1 and state = 'running' and claimed_by = ?2 and claims = ?3";

pub(crate) async fn ack(writer: &Writer, p: &AckParams) -> Result<bool, JobError> {
    let done = sqlx::query(ACK)
        .bind(p.job_id)
        .bind(&p.by.worker_id)
        .bind(p.by.claim)
        .bind(ts(p.now))
        .execute(&mut *writer.acquire("job_ack").await?)
        .await
        .map_err(|e| classify("job_ack", e))?;
    Ok(done.rows_affected() == 1)
}

/// Many acks in one statement (one commit, one round trip to the connection's thread), each
/// fenced on its own claim: the batch travels as a JSON array of `[id hex, worker, claim]`.
const ACK_MANY: &str = "with acks(id, worker, claims) as (
        select unhex(value ->> 0), value ->> 1, value ->> 2 from json_each(?1)
    )
    update x_jobs
    set state = 'done', visible_at = null, updated_at = ?2,
        last_error = null, last_error_code = null
    from acks
    where x_jobs.id = acks.id and x_jobs.state = 'running'
      and x_jobs.claimed_by = acks.worker and x_jobs.claims = acks.claims
    returning x_jobs.id";

/// Many acks in one statement, each fenced on its own claim, all stored at the batch's one
/// `now` (the latest of its acks').
pub(crate) async fn ack_many(writer: &Writer, params: &[AckParams]) -> Result<Vec<bool>, JobError> {
    let Some(now) = params.iter().map(|p| p.now).max() else {
        return Ok(Vec::new());
    };
    let batch: Vec<serde_json::Value> = params
        .iter()
        .map(|p| serde_json::json!([p.job_id.simple().to_string(), p.by.worker_id, p.by.claim]))
        .collect();
    let batch = serde_json::Value::Array(batch).to_string();
    let landed: std::collections::HashSet<JobId> = sqlx::query_scalar(ACK_MANY)
        .bind(batch)
        .bind(ts(now))
        .fetch_all(&mut *writer.acquire("job_ack_many").await?)
        .await
        .map_err(|e| classify("job_ack_many", e))?
        .into_iter()
        .collect();
    Ok(params.iter().map(|p| landed.contains(&p.job_id)).collect())
}

pub(crate) async fn nack(writer: &Writer, p: &NackParams) -> Result<bool, JobError> {
    let done = sqlx::query(
        "update x_jobs
         set state = ?4,
             attempt = case when ?5 then attempt else max(attempt - 1, 0) end,
             run_at = ?6,
             visible_at = null,
             last_error = coalesce(?7, last_error),
             last_error_code = case when ?7 is null then last_error_code else ?8 end,
             updated_at = ?9
         where id = ?1 and state = 'running' and claimed_by = ?2 and claims = ?3",
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
    .execute(&mut *writer.acquire("job_nack").await?)
    .await
    .map_err(|e| classify("job_nack", e))?;
    Ok(done.rows_affected() == 1)
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
    .execute(&mut *writer.acquire("job_heartbeat").await?)
    .await
    .map_err(|e| classify("job_heartbeat", e))?;
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
    .execute(&mut *writer.acquire("job_progress").await?)
    .await
    .map_err(|e| classify("job_progress", e))?;
    Ok(done.rows_affected() == 1)
}

pub(crate) async fn get(reader: &SqlitePool, id: JobId) -> Result<Option<JobRecord>, JobError> {
    let mut conn = reader.acquire().await.map_err(|e| classify("job_get", e))?;
    get_on(&mut conn, id).await
}

async fn get_on(conn: &mut SqliteConnection, id: JobId) -> Result<Option<JobRecord>, JobError> {
    let failed = |e| classify("job_get", e);
    let row = sqlx::query(concat!(
        "select ",
        job_columns!(),
        " from x_jobs where id = ?1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await
    .map_err(failed)?;
    row.as_ref()
        .map(|r| JobRecord::from_row(r).map_err(failed))
        .transpose()
}

pub(crate) async fn cancel(writer: &Writer, p: &JobCancelParams) -> Result<JobRecord, JobError> {
    let failed = |e| classify("job_cancel", e);
    // The cancel and its history row commit together.
    let mut conn = writer.acquire("job_cancel").await?;
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
            None,
            actor,
            p.now,
            "job_cancel",
        )
        .await?;
        tx.commit().await.map_err(failed)?;
        return Ok(cancelled);
    }
    drop(tx);
    let message = match get_on(&mut conn, p.id).await? {
        Some(job) => format!("job {} is {}, not live", p.id, job.state),
        None => format!("no job with id {}", p.id),
    };
    Err(JobError::new(ErrorCode::JobNotCancellable, message))
}

pub(crate) async fn queue_stats(
    reader: &SqlitePool,
    now: Timestamp,
) -> Result<Vec<QueueStats>, JobError> {
    let failed = |e| classify("queue_stats", e);
    let rows = sqlx::query(
        "select queue, state,
                (state in ('ready', 'delayed') and run_at > ?1) as not_due,
                count(*) as n,
                min(run_at) as oldest_run_at
         from x_jobs
         group by 1, 2, 3",
    )
    .bind(ts(now))
    .fetch_all(reader)
    .await
    .map_err(failed)?;
    let mut by_queue: BTreeMap<String, QueueStats> = BTreeMap::new();
    for row in &rows {
        let queue: String = row.try_get("queue").map_err(failed)?;
        let state: JobState = row.try_get("state").map_err(failed)?;
        let not_due: bool = row.try_get("not_due").map_err(failed)?;
        let n = u64::try_from(row.try_get::<i64, _>("n").map_err(failed)?).unwrap_or(0);
        let oldest: Option<Timestamp> = row.try_get("oldest_run_at").map_err(failed)?;
        let stats = by_queue.entry(queue.clone()).or_insert_with(|| QueueStats {
            queue,
            ..QueueStats::default()
        });
        match state {
            JobState::Ready | JobState::Delayed if not_due => stats.delayed += n,
            JobState::Ready | JobState::Delayed => {
                stats.ready += n;
                if let Some(oldest) = oldest {
                    let age = (now - oldest).num_milliseconds().max(0) as u64;
                    stats.oldest_ready_ms = Some(stats.oldest_ready_ms.unwrap_or(0).max(age));
                }
            }
            JobState::Running => stats.running += n,
            JobState::Suspended => stats.suspended += n,
            JobState::Done => stats.done += n,
            JobState::Failed => stats.failed += n,
            JobState::Dead => stats.dead += n,
            JobState::Cancelled => stats.cancelled += n,
        }
    }
    Ok(by_queue.into_values().collect())
}

/// One bounded batch of finished rows past their windows, with the steps of runs no other row
/// shares, in one transaction.
pub(crate) async fn purge(writer: &Writer, p: &JobPurgeParams) -> Result<u64, JobError> {
    let failed = |e| classify("job_purge", e);
    let mut conn = writer.acquire("job_purge").await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    sqlx::query(
        "create temp table if not exists x_jobs_doomed (id blob primary key, run_id blob not null)",
    )
    .execute(&mut *tx)
    .await
    .map_err(failed)?;
    sqlx::query("delete from temp.x_jobs_doomed")
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
    sqlx::query(
        "insert into temp.x_jobs_doomed (id, run_id)
         select id, run_id from (
             select id, run_id from x_jobs
             where state = 'done' and updated_at < ?1
             order by updated_at limit ?3 + 0
         )
         union all
         select id, run_id from (
             select id, run_id from x_jobs
             where state in ('failed', 'dead', 'cancelled') and updated_at < ?2
             order by updated_at limit ?3 + 0
         )",
    )
    .bind(ts(p.done_before))
    .bind(ts(p.finished_before))
    .bind(i64::from(p.limit))
    .execute(&mut *tx)
    .await
    .map_err(failed)?;
    sqlx::query(
        "delete from x_job_steps
         where run_id in (
             select d.run_id from temp.x_jobs_doomed d
             where not exists (
                 select 1 from x_jobs j
                 where j.id = d.run_id and j.run_id = d.run_id and j.id <> d.id
             )
             and not exists (
                 select 1 from x_jobs j
                 where j.run_id = d.run_id and j.run_id <> j.id and j.id <> d.id
             )
         )",
    )
    .execute(&mut *tx)
    .await
    .map_err(failed)?;
    let gone = sqlx::query("delete from x_jobs where id in (select id from temp.x_jobs_doomed)")
        .execute(&mut *tx)
        .await
        .map_err(failed)?
        .rows_affected();
    sqlx::query("delete from temp.x_jobs_doomed")
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
    let before = p.done_before.max(p.finished_before);
    history::purge(&mut tx, before, p.limit).await?;
    tx.commit().await.map_err(failed)?;
    Ok(gone)
}
