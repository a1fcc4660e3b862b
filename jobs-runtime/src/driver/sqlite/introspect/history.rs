//! A job's history (`x_job_history`, migration 0004): the row each act appends inside the act's
//! own transaction, the read, and the purge's share. The bulk verbs write theirs in `bulk.rs`,
//! one `insert ... select` over the rows they move.

use sqlx::sqlite::{SqliteConnection, SqlitePool};
use sqlx::FromRow;

use super::super::classify::{classify, Op};
use super::super::time::ts;
use crate::clock::Timestamp;
use crate::driver::introspect::*;
use crate::driver::records::JobRecord;
use crate::error::JobError;

/// Appends `verb` (with `detail`) at `at` by `actor` to the history of `job`, inside the
/// caller's transaction.
pub(crate) async fn append(
    tx: &mut SqliteConnection,
    job: &JobRecord,
    verb: JobVerb,
    detail: Option<&str>,
    actor: Option<&str>,
    at: Timestamp,
    operation: Op,
) -> Result<(), JobError> {
    sqlx::query(
        "insert into x_job_history (job_id, tenant_id, at, actor, verb, detail)
         values (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .bind(job.id)
    .bind(job.tenant_id.as_deref())
    .bind(ts(at))
    .bind(actor)
    .bind(verb.as_str())
    .bind(detail)
    .execute(&mut *tx)
    .await
    .map_err(|e| classify(operation, e))?;
    Ok(())
}

/// One job's history, newest first.
pub(super) async fn list(
    reader: &SqlitePool,
    params: &JobHistoryParams,
) -> Result<Vec<JobHistoryEntry>, JobError> {
    let limit = check_history(params)?;
    let failed = |e| classify(Op::IntrospectJobHistory, e);
    let rows = sqlx::query(
        "select job_id, at, actor, verb, detail from x_job_history
         where job_id = ?1 and (?2 is null or tenant_id = ?2)
         order by at desc, seq desc
         limit ?3 + 0",
    )
    .bind(params.id)
    .bind(params.tenant_id.as_deref())
    .bind(i64::from(limit))
    .fetch_all(reader)
    .await
    .map_err(failed)?;
    rows.iter()
        .map(|row| JobHistoryEntry::from_row(row).map_err(failed))
        .collect()
}

/// The purge's share, inside its transaction: up to `limit` history rows written before
/// `before` whose job is no longer stored, oldest first (Postgres' `history_purge.sql`).
pub(crate) async fn purge(
    tx: &mut SqliteConnection,
    before: Timestamp,
    limit: u32,
) -> Result<u64, JobError> {
    let done = sqlx::query(
        "delete from x_job_history where seq in (
             select h.seq from x_job_history h
             where h.at < ?1
               and not exists (select 1 from x_jobs j where j.id = h.job_id)
             order by h.at
             limit ?2 + 0
         )",
    )
    .bind(ts(before))
    .bind(i64::from(limit))
    .execute(&mut *tx)
    .await
    .map_err(|e| classify(Op::JobPurge, e))?;
    Ok(done.rows_affected())
}
