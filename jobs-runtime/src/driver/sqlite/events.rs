//! Events and the marks waits draw. An event's `seq` is its mark: SQLite commits one writer at
//! a time, so an event committed after a mark was read always holds a larger `seq`, and one in
//! a caller's transaction that rolls back leaves no row (and no wake: the
//! `x_job_events_wake` trigger's update rolls back with it).

use super::writer::Writer;
use sqlx::sqlite::{SqliteConnection, SqlitePool};
use sqlx::FromRow;

use super::classify::{classify, Op};
use super::time::ts;
use crate::clock::add;
use crate::driver::records::*;
use crate::driver::EventFindParams;
use crate::error::JobError;

pub(crate) async fn publish_on(
    conn: &mut SqliteConnection,
    event: &EventPublish,
) -> Result<EventId, JobError> {
    let failed = |e| classify(Op::EventPublish, e);
    // Expired events are the purge job's (`event_purge`), as on Postgres, not the publisher's.
    sqlx::query(
        "insert into x_job_events (id, name, key, payload, published_at, expires_at)
         values (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .bind(event.id)
    .bind(&event.name)
    .bind(&event.key)
    .bind(&event.payload)
    .bind(ts(event.now))
    .bind(ts(add(event.now, event.ttl)))
    .execute(&mut *conn)
    .await
    .map_err(failed)?;
    Ok(event.id)
}

/// Deletes up to `limit` events expired at `now`, oldest expiry first, on
/// `x_job_events_expiry_idx`; answers how many went.
pub(crate) async fn purge(writer: &Writer, params: &EventPurgeParams) -> Result<u64, JobError> {
    let gone = sqlx::query(
        "delete from x_job_events where seq in (
             select seq from x_job_events where expires_at <= ?1 order by expires_at limit ?2 + 0
         )",
    )
    .bind(ts(params.now))
    .bind(i64::from(params.limit))
    .execute(&mut *writer.acquire(Op::EventPurge).await?)
    .await
    .map_err(|e| classify(Op::EventPurge, e))?;
    Ok(gone.rows_affected())
}

/// The latest `seq` committed: a wait that draws it matches only events stored after.
pub(crate) async fn mark(reader: &SqlitePool) -> Result<String, JobError> {
    let seq: Option<i64> = sqlx::query_scalar("select max(seq) from x_job_events")
        .fetch_one(reader)
        .await
        .map_err(|e| classify(Op::EventMark, e))?;
    Ok(seq.unwrap_or(0).to_string())
}

pub(crate) async fn find(
    reader: &SqlitePool,
    params: &EventFindParams<'_>,
) -> Result<Option<JobEvent>, JobError> {
    let failed = |e| classify(Op::EventFind, e);
    // A mark this driver did not write matches every stored event of the name and key.
    let since: i64 = params.since.mark.parse().unwrap_or(0);
    let row = sqlx::query(
        "select id, name, key, payload, published_at from x_job_events
         where name = ?1 and key = ?2 and seq > ?3 and expires_at > ?4
         order by seq
         limit 1",
    )
    .bind(params.name)
    .bind(params.key)
    .bind(since)
    .bind(ts(params.now))
    .fetch_optional(reader)
    .await
    .map_err(failed)?;
    row.as_ref()
        .map(|r| JobEvent::from_row(r).map_err(failed))
        .transpose()
}
