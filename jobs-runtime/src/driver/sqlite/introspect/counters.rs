//! The per-job counters: reads summing the delta rows the `x_job_counters_count` trigger writes
//! (one per settle), and the rollup that folds them as Postgres' does.
//!
//! The rollup, in one `BEGIN IMMEDIATE` transaction: every row whose bucket aged past its tier
//! (or that shares its bucket with another row) is noted by rowid with the width it belongs in
//! now, in a temporary table; the noted rows are summed into their new buckets and inserted,
//! then deleted by rowid, so no row is counted twice and the new rows are never touched.

use crate::driver::sqlite::writer::Writer;
use std::time::Duration;

use sqlx::sqlite::{SqlitePool, SqliteRow};
use sqlx::{Connection, Row};

use super::super::classify::{classify, Op};
use super::super::time::ts;
use crate::clock::Timestamp;
use crate::driver::introspect::*;
use crate::driver::introspect::{CounterTotalsParams, CountersParams, CountersRollupParams};
use crate::error::JobError;

/// The sums of a group of counter rows.
macro_rules! sums {
    () => {
        "sum(done) as done, sum(retried) as retried, sum(failed) as failed, \
         sum(dead) as dead, sum(duration_ms) as duration_ms"
    };
}

fn non_negative(row: &SqliteRow, column: &str, operation: Op) -> Result<u64, JobError> {
    let n: i64 = row.try_get(column).map_err(|e| classify(operation, e))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// One job name's buckets since `since`, oldest first (the delta rows of a bucket summed).
pub(super) async fn counters(
    reader: &SqlitePool,
    p: &CountersParams<'_>,
) -> Result<Vec<CounterBucket>, JobError> {
    const OP: Op = Op::IntrospectCounters;
    let failed = |e| classify(OP, e);
    let rows = sqlx::query(concat!(
        "select width_secs, bucket, ",
        sums!(),
        " from x_job_counters
          where name = ?1 and bucket >= ?2
          group by width_secs, bucket
          order by bucket, width_secs"
    ))
    .bind(p.name)
    .bind(ts(p.since))
    .fetch_all(reader)
    .await
    .map_err(failed)?;
    rows.iter()
        .map(|row| {
            let width: i64 = row.try_get("width_secs").map_err(failed)?;
            Ok(CounterBucket {
                bucket: Some(row.try_get("bucket").map_err(failed)?),
                width_secs: u32::try_from(width).unwrap_or(0),
                done: non_negative(row, "done", OP)?,
                retried: non_negative(row, "retried", OP)?,
                failed: non_negative(row, "failed", OP)?,
                dead: non_negative(row, "dead", OP)?,
                duration_ms: non_negative(row, "duration_ms", OP)?,
            })
        })
        .collect()
}

/// Every job name's counters since `since`, summed, by name.
pub(super) async fn totals(
    reader: &SqlitePool,
    p: &CounterTotalsParams,
) -> Result<Vec<CounterTotals>, JobError> {
    const OP: Op = Op::IntrospectCounterTotals;
    let failed = |e| classify(OP, e);
    let rows = sqlx::query(concat!(
        "select name, ",
        sums!(),
        " from x_job_counters
          where bucket >= ?1
          group by name
          order by name"
    ))
    .bind(ts(p.since))
    .fetch_all(reader)
    .await
    .map_err(failed)?;
    rows.iter()
        .map(|row| {
            Ok(CounterTotals {
                name: row.try_get("name").map_err(failed)?,
                done: non_negative(row, "done", OP)?,
                retried: non_negative(row, "retried", OP)?,
                failed: non_negative(row, "failed", OP)?,
                dead: non_negative(row, "dead", OP)?,
                duration_ms: non_negative(row, "duration_ms", OP)?,
            })
        })
        .collect()
}

// NOTE below has one case per tier.
const _: () = assert!(COUNTER_TIERS.len() == 3);

/// The rows to move, with the width each belongs in at now: the tier whose oldest kept
/// bucket (?1, ?3, ?5: now less each tier's keep) it is newer than, of width ?2, ?4, ?6; none
/// (dropped) past the last.
const NOTE: &str = "insert into temp.x_job_counters_doomed (rid, target)
    select rid, target from (
        select c.rowid as rid, c.width_secs,
               count(*) over (partition by c.name, c.width_secs, c.bucket) as copies,
               case when c.bucket > ?1 then ?2
                    when c.bucket > ?3 then ?4
                    when c.bucket > ?5 then ?6
               end as target
        from x_job_counters c
    )
    where target is not width_secs or copies > 1";

/// The noted rows summed into the buckets of their new width. A bucket's start is read from
/// its whole seconds (the stored form without its fraction and zone), floored to the width,
/// and written back in the stored form.
const FOLD: &str = "insert into x_job_counters
        (name, width_secs, bucket, done, retried, failed, dead, duration_ms)
    select name, target,
           strftime('%Y-%m-%dT%H:%M:%S', secs - ((secs % target) + target) % target, 'unixepoch')
               || '.000000Z',
           sum(done), sum(retried), sum(failed), sum(dead), sum(duration_ms)
    from (
        select c.name, d.target, c.done, c.retried, c.failed, c.dead, c.duration_ms,
               cast(strftime('%s', substr(c.bucket, 1, 19)) as integer) as secs
        from temp.x_job_counters_doomed d
        join x_job_counters c on c.rowid = d.rid
        where d.target is not null
    )
    group by 1, 2, 3";

/// `now` less `keep`, in the stored form.
fn oldest_kept(now: Timestamp, keep: Duration) -> Timestamp {
    chrono::Duration::from_std(keep)
        .ok()
        .and_then(|keep| now.checked_sub_signed(keep))
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC)
}

/// Folds buckets past their tier into the next, drops those past the last; answers the rows
/// rewritten.
pub(super) async fn rollup(writer: &Writer, p: &CountersRollupParams) -> Result<u64, JobError> {
    let failed = |e| classify(Op::IntrospectCountersRollup, e);
    let mut conn = writer.acquire(Op::IntrospectCountersRollup).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    sqlx::query(
        "create temp table if not exists x_job_counters_doomed
             (rid integer primary key, target integer)",
    )
    .execute(&mut *tx)
    .await
    .map_err(failed)?;
    sqlx::query("delete from temp.x_job_counters_doomed")
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
    let mut note = sqlx::query(NOTE);
    for tier in COUNTER_TIERS {
        note = note
            .bind(ts(oldest_kept(p.now, tier.keep)))
            .bind(i64::try_from(tier.bucket.as_secs()).unwrap_or(i64::MAX));
    }
    note.execute(&mut *tx).await.map_err(failed)?;
    sqlx::query(FOLD).execute(&mut *tx).await.map_err(failed)?;
    let moved = sqlx::query(
        "delete from x_job_counters where rowid in (select rid from temp.x_job_counters_doomed)",
    )
    .execute(&mut *tx)
    .await
    .map_err(failed)?
    .rows_affected();
    sqlx::query("delete from temp.x_job_counters_doomed")
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
    tx.commit().await.map_err(failed)?;
    Ok(moved)
}
