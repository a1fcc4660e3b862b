//! The verbs on one job: remove, requeue (from a step too), promote. Each runs in one
//! `BEGIN IMMEDIATE` transaction on the writer: it holds the database's write lock from its
//! first read, so the row it reads is the row it changes (Postgres takes `FOR UPDATE` for
//! that), and a refusal is decided on the same row. The refusals are Postgres' own, code and
//! message. Each appends its row to the job's history in that same transaction.

use crate::driver::sqlite::writer::Writer;
use sqlx::sqlite::SqliteConnection;
use sqlx::{Connection, FromRow};

use super::super::classify::{classify, Op};
use super::super::job_columns;
use super::super::time::ts;
use super::history;
use crate::driver::introspect::*;
use crate::driver::introspect::{JobPromoteParams, JobRemoveParams};
use crate::driver::records::*;
use crate::error::JobError;

/// The row as it is now, inside the caller's transaction.
async fn current(
    tx: &mut SqliteConnection,
    id: JobId,
    operation: Op,
) -> Result<Option<JobRecord>, JobError> {
    let failed = |e| classify(operation, e);
    let row = sqlx::query(concat!(
        "select ",
        job_columns!(),
        " from x_jobs where id = ?1"
    ))
    .bind(id)
    .fetch_optional(&mut *tx)
    .await
    .map_err(failed)?;
    row.as_ref()
        .map(|r| JobRecord::from_row(r).map_err(failed))
        .transpose()
}

/// Deletes the job unless it runs, and its run's steps unless another job shares the run.
pub(super) async fn remove(
    writer: &Writer,
    params: &JobRemoveParams,
) -> Result<JobRecord, JobError> {
    let id = params.id;
    let failed = |e| classify(Op::IntrospectJobRemove, e);
    let mut conn = writer.acquire(Op::IntrospectJobRemove).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    let removed = sqlx::query(concat!(
        "delete from x_jobs where id = ?1 and state <> 'running' returning ",
        job_columns!()
    ))
    .bind(id)
    .fetch_optional(&mut *tx)
    .await
    .map_err(failed)?;
    let Some(removed) = removed else {
        let row = current(&mut tx, id, Op::IntrospectJobRemove).await?;
        return Err(refusal(Bulk::Remove, row.as_ref(), id));
    };
    let removed = JobRecord::from_row(&removed).map_err(failed)?;
    // The row is gone: any job still on the run shares it, and keeps its steps.
    sqlx::query(
        "delete from x_job_steps
         where run_id = ?1
           and not exists (select 1 from x_jobs o where o.id = ?1 and o.run_id = ?1)
           and not exists (select 1 from x_jobs o where o.run_id = ?1 and o.run_id <> o.id)",
    )
    .bind(removed.run_id)
    .execute(&mut *tx)
    .await
    .map_err(failed)?;
    let actor = params.actor.as_deref();
    history::append(
        &mut tx,
        &removed,
        JobVerb::Remove,
        None,
        actor,
        params.now,
        Op::IntrospectJobRemove,
    )
    .await?;
    tx.commit().await.map_err(failed)?;
    Ok(removed)
}

/// Puts one finished job back in its queue, due now, attempts from zero, on the same run: its
/// stored steps replay, except `from_step` and every step written after it.
pub(super) async fn requeue(
    writer: &Writer,
    params: &JobRequeueParams,
) -> Result<JobRecord, JobError> {
    let id = params.id;
    let failed = |e| classify(Op::IntrospectJobRequeue, e);
    let mut conn = writer.acquire(Op::IntrospectJobRequeue).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    let row = match current(&mut tx, id, Op::IntrospectJobRequeue).await? {
        Some(row) if !row.state.is_live() => row,
        other => return Err(refusal(Bulk::Requeue, other.as_ref(), id)),
    };
    let forget_from: Option<String> = match &params.from_step {
        None => None,
        Some(step) => {
            let at: Option<String> = sqlx::query_scalar(
                "select updated_at from x_job_steps where run_id = ?1 and name = ?2",
            )
            .bind(row.run_id)
            .bind(step)
            .fetch_optional(&mut *tx)
            .await
            .map_err(failed)?;
            Some(at.ok_or_else(|| unknown_step(id, step))?)
        }
    };
    // Postgres' unique live-key index refuses the update; here the write lock makes the
    // look-up first exact, and nothing has changed yet when it refuses. Another job holds the
    // key while live or inside its unique period; a lapsed mark holds nothing, and is cleared
    // so the index takes the revived row.
    sqlx::query(crate::driver::sqlite::enqueue::LAPSE)
        .bind(&row.name)
        .bind(&row.tenant_id)
        .bind(&row.idempotency_key)
        .bind(ts(params.now))
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
    let held: Option<i64> = sqlx::query_scalar(
        "select 1 from x_jobs
         where name = ?1 and coalesce(tenant_id, '') = coalesce(?2, '') and idempotency_key = ?3
           and (state in ('ready', 'delayed', 'running', 'suspended') or unique_until is not null)
           and (state in ('ready', 'delayed', 'running', 'suspended') or unique_until > ?5)
           and id <> ?4",
    )
    .bind(&row.name)
    .bind(&row.tenant_id)
    .bind(&row.idempotency_key)
    .bind(id)
    .bind(ts(params.now))
    .fetch_optional(&mut *tx)
    .await
    .map_err(failed)?;
    if held.is_some() {
        return Err(duplicate(&row, None));
    }
    if let Some(from) = forget_from {
        sqlx::query("delete from x_job_steps where run_id = ?1 and updated_at >= ?2")
            .bind(row.run_id)
            .bind(from)
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
    }
    let requeued = sqlx::query(concat!(
        "update x_jobs
         set state = 'ready', attempt = 0, run_at = ?2, visible_at = null, claimed_by = null,
             progress = null, result = null, updated_at = ?2
         where id = ?1
         returning ",
        job_columns!()
    ))
    .bind(id)
    .bind(ts(params.now))
    .fetch_one(&mut *tx)
    .await
    .map_err(failed)?;
    let requeued = JobRecord::from_row(&requeued).map_err(failed)?;
    let verb = match params.from_step {
        Some(_) => JobVerb::RequeueFromStep,
        None => JobVerb::Requeue,
    };
    let (step, actor) = (params.from_step.as_deref(), params.actor.as_deref());
    history::append(
        &mut tx,
        &requeued,
        verb,
        step,
        actor,
        params.now,
        Op::IntrospectJobRequeue,
    )
    .await?;
    tx.commit().await.map_err(failed)?;
    Ok(requeued)
}

/// Makes a job waiting on its run time (delayed, or ready and backing off) due now.
pub(super) async fn promote(
    writer: &Writer,
    params: &JobPromoteParams,
) -> Result<JobRecord, JobError> {
    let (id, now) = (params.id, params.now);
    let failed = |e| classify(Op::IntrospectJobPromote, e);
    let mut conn = writer.acquire(Op::IntrospectJobPromote).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    let promoted = sqlx::query(concat!(
        "update x_jobs set state = 'ready', run_at = ?2, updated_at = ?2
         where id = ?1 and state in ('delayed', 'ready') and run_at > ?2
         returning ",
        job_columns!()
    ))
    .bind(id)
    .bind(ts(now))
    .fetch_optional(&mut *tx)
    .await
    .map_err(failed)?;
    let Some(promoted) = promoted else {
        let row = current(&mut tx, id, Op::IntrospectJobPromote).await?;
        return Err(refusal(Bulk::Promote, row.as_ref(), id));
    };
    let promoted = JobRecord::from_row(&promoted).map_err(failed)?;
    let actor = params.actor.as_deref();
    history::append(
        &mut tx,
        &promoted,
        JobVerb::Promote,
        None,
        actor,
        now,
        Op::IntrospectJobPromote,
    )
    .await?;
    tx.commit().await.map_err(failed)?;
    Ok(promoted)
}
