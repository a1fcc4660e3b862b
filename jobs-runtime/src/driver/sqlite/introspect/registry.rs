//! Queue pauses and the worker registry. A worker's queues and in-flight ids are JSON arrays
//! (SQLite has no array type), written and read through sqlx's `Json`.

use crate::driver::sqlite::writer::Writer;
use sqlx::sqlite::SqlitePool;
use sqlx::types::Json;
use sqlx::{Connection, Row};

use super::super::classify::{classify, Op};
use super::super::time::ts;
use crate::clock::add;
use crate::driver::introspect::*;
use crate::driver::introspect::{
    QueuePauseParams, QueueResumeParams, WorkerForgetParams, WorkerListParams,
};
use crate::driver::records::JobId;
use crate::error::JobError;

/// Pauses a queue; a second pause keeps the first pause's time and actor. The claim reads this row.
pub(super) async fn pause(writer: &Writer, p: &QueuePauseParams<'_>) -> Result<(), JobError> {
    sqlx::query(
        "insert into x_job_pauses (queue, paused_at, paused_by) values (?1, ?2, ?3)
         on conflict (queue) do nothing",
    )
    .bind(p.queue)
    .bind(ts(p.now))
    .bind(p.actor)
    .execute(&mut *writer.acquire(Op::IntrospectQueuePause).await?)
    .await
    .map_err(|e| classify(Op::IntrospectQueuePause, e))?;
    Ok(())
}

/// Resumes a queue: whether it was paused.
pub(super) async fn resume(writer: &Writer, p: &QueueResumeParams<'_>) -> Result<bool, JobError> {
    let done = sqlx::query("delete from x_job_pauses where queue = ?1")
        .bind(p.queue)
        .execute(&mut *writer.acquire(Op::IntrospectQueueResume).await?)
        .await
        .map_err(|e| classify(Op::IntrospectQueueResume, e))?;
    Ok(done.rows_affected() > 0)
}

/// The paused queues, sorted (binary collation: byte order, as Postgres' `collate "C"`).
pub(super) async fn paused(reader: &SqlitePool) -> Result<Vec<QueuePause>, JobError> {
    let failed = |e| classify(Op::IntrospectQueuePaused, e);
    let rows = sqlx::query("select queue, paused_at, paused_by from x_job_pauses order by queue")
        .fetch_all(reader)
        .await
        .map_err(failed)?;
    rows.iter()
        .map(|row| {
            Ok(QueuePause {
                queue: row.try_get("queue").map_err(failed)?,
                paused_at: row.try_get("paused_at").map_err(failed)?,
                paused_by: row.try_get("paused_by").map_err(failed)?,
            })
        })
        .collect()
}

/// Writes or refreshes a worker's row, and sweeps the rows of other workers that expired.
pub(super) async fn announce(writer: &Writer, a: &WorkerAnnounce) -> Result<(), JobError> {
    let failed = |e| classify(Op::IntrospectWorkerAnnounce, e);
    let in_flight: Vec<JobId> = a
        .in_flight
        .iter()
        .take(MAX_WORKER_IN_FLIGHT)
        .copied()
        .collect();
    let mut conn = writer.acquire(Op::IntrospectWorkerAnnounce).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    sqlx::query("delete from x_job_workers where expires_at <= ?1 and id <> ?2")
        .bind(ts(a.now))
        .bind(&a.id)
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
    sqlx::query(
        "insert into x_job_workers
             (id, host, started_at, queues, slots, in_flight, in_flight_count, heartbeat_at,
              expires_at, settings)
         values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         on conflict (id) do update
         set host = excluded.host,
             started_at = excluded.started_at,
             queues = excluded.queues,
             slots = excluded.slots,
             in_flight = excluded.in_flight,
             in_flight_count = excluded.in_flight_count,
             heartbeat_at = excluded.heartbeat_at,
             expires_at = excluded.expires_at,
             settings = excluded.settings",
    )
    .bind(&a.id)
    .bind(&a.host)
    .bind(ts(a.started_at))
    .bind(Json(&a.queues))
    .bind(i64::from(a.slots))
    .bind(Json(&in_flight))
    .bind(i64::from(a.in_flight_count))
    .bind(ts(a.now))
    .bind(ts(add(a.now, a.ttl)))
    .bind(Json(&a.settings))
    .execute(&mut *tx)
    .await
    .map_err(failed)?;
    tx.commit().await.map_err(failed)?;
    Ok(())
}

/// Deletes a worker's row (a graceful stop).
pub(super) async fn forget(writer: &Writer, p: &WorkerForgetParams<'_>) -> Result<(), JobError> {
    sqlx::query("delete from x_job_workers where id = ?1")
        .bind(p.id)
        .execute(&mut *writer.acquire(Op::IntrospectWorkerForget).await?)
        .await
        .map_err(|e| classify(Op::IntrospectWorkerForget, e))?;
    Ok(())
}

/// The rows not expired at `now`, by id.
pub(super) async fn list(
    reader: &SqlitePool,
    p: &WorkerListParams,
) -> Result<Vec<WorkerRow>, JobError> {
    let failed = |e| classify(Op::IntrospectWorkerList, e);
    let rows = sqlx::query(
        "select id, host, started_at, queues, slots, in_flight, in_flight_count, heartbeat_at,
                expires_at, settings
         from x_job_workers
         where expires_at > ?1
         order by id",
    )
    .bind(ts(p.now))
    .fetch_all(reader)
    .await
    .map_err(failed)?;
    rows.iter()
        .map(|row| {
            let slots: i64 = row.try_get("slots").map_err(failed)?;
            let count: i64 = row.try_get("in_flight_count").map_err(failed)?;
            let Json(queues): Json<Vec<String>> = row.try_get("queues").map_err(failed)?;
            let Json(in_flight): Json<Vec<JobId>> = row.try_get("in_flight").map_err(failed)?;
            let Json(settings): Json<WorkerSettings> = row.try_get("settings").map_err(failed)?;
            Ok(WorkerRow {
                id: row.try_get("id").map_err(failed)?,
                host: row.try_get("host").map_err(failed)?,
                started_at: row.try_get("started_at").map_err(failed)?,
                queues,
                slots: u32::try_from(slots).unwrap_or(0),
                in_flight,
                in_flight_count: u32::try_from(count).unwrap_or(0),
                settings,
                heartbeat_at: row.try_get("heartbeat_at").map_err(failed)?,
                expires_at: row.try_get("expires_at").map_err(failed)?,
            })
        })
        .collect()
}
