//! The core port's reads: one job by id, and the per-queue counts.

use std::collections::BTreeMap;

use sqlx::sqlite::{SqliteConnection, SqlitePool};
use sqlx::{FromRow, Row};

use super::classify::{classify, Op};
use super::job_columns;
use super::time::ts;
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::error::JobError;

pub(crate) async fn get(reader: &SqlitePool, id: JobId) -> Result<Option<JobRecord>, JobError> {
    let mut conn = reader
        .acquire()
        .await
        .map_err(|e| classify(Op::JobGet, e))?;
    get_on(&mut conn, id).await
}

pub(super) async fn get_on(
    conn: &mut SqliteConnection,
    id: JobId,
) -> Result<Option<JobRecord>, JobError> {
    let failed = |e| classify(Op::JobGet, e);
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

pub(crate) async fn queue_stats(
    reader: &SqlitePool,
    now: Timestamp,
) -> Result<Vec<QueueStats>, JobError> {
    let failed = |e| classify(Op::QueueStats, e);
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
        stats.add(state, !not_due, n, oldest, now);
    }
    Ok(by_queue.into_values().collect())
}
