//! `job_purge`: one bounded batch of finished rows past their windows, the steps of runs no
//! other row shares, the history of jobs no longer stored, and the groups of waiters no longer
//! stored once every member of theirs was counted, in one transaction.

use sqlx::Connection;

use super::classify::{classify, Op};
use super::introspect::history;
use super::time::ts;
use super::writer::Writer;
use crate::driver::records::*;
use crate::error::JobError;

/// One bounded batch of finished rows past their windows, with the steps of runs no other row
/// shares, in one transaction.
pub(crate) async fn purge(writer: &Writer, p: &JobPurgeParams) -> Result<u64, JobError> {
    let failed = |e| classify(Op::JobPurge, e);
    let mut conn = writer.acquire(Op::JobPurge).await?;
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
    // The edges of a purged dependent go with it; a dependency's stay, read as gone.
    sqlx::query(
        "delete from x_job_dependencies where job_id in (select id from temp.x_jobs_doomed)",
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
    // The groups of waiters gone, once every member of theirs was counted, with their members.
    sqlx::query("create temp table if not exists x_groups_doomed (id blob primary key)")
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
    sqlx::query(
        "insert or ignore into temp.x_groups_doomed (id)
         select g.id from x_job_groups g
         where g.settled >= g.size
           and not exists (select 1 from x_jobs j where j.id = g.waiter)
         limit ?1 + 0",
    )
    .bind(i64::from(p.limit))
    .execute(&mut *tx)
    .await
    .map_err(failed)?;
    for purge_groups in [
        "delete from x_job_group_members where group_id in (select id from temp.x_groups_doomed)",
        "delete from x_job_groups where id in (select id from temp.x_groups_doomed)",
        "delete from temp.x_groups_doomed",
    ] {
        sqlx::query(purge_groups)
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
    }
    tx.commit().await.map_err(failed)?;
    Ok(gone)
}
