//! The bulk verbs: requeue, remove and promote up to [`MAX_BULK_ROWS`] rows, oldest first by
//! `(created_at, id)`. SQLite has no data-modifying CTEs, so each verb is a few statements in
//! one `BEGIN IMMEDIATE` transaction: the count of the rows it could move, then the moves, each
//! re-reading the same `picked` rows (a deterministic order, under the write lock, so every
//! statement sees the same ones). `remaining` is the count less what moved, as on Postgres.
//! Before a verb moves its rows, an `insert ... select` over the same picked rows appends one
//! history row per job (`bulk` detail), so the history and the move commit together.
//!
//! Every statement takes the same parameters: ?1 state, ?2 queue, ?3 name, ?4 tenant (each
//! filter optional), ?5 now, ?6 rows, ?7 the actor; a statement binds only the ones it names.

use crate::driver::sqlite::writer::Writer;
use sqlx::sqlite::{Sqlite, SqliteConnection};
use sqlx::{Connection, Row};

use super::super::classify::{classify, Op};
use super::super::time::ts;
use crate::driver::introspect::*;
use crate::error::JobError;

/// The rows in state ?1 under the optional filters.
macro_rules! matched {
    () => {
        " from x_jobs j
          where j.state = ?1
            and (?2 is null or j.queue = ?2)
            and (?3 is null or j.name = ?3)
            and (?4 is null or j.tenant_id = ?4)"
    };
}

/// The finished rows a requeue may move: none whose key another job holds (a live one, or a
/// finished one inside its unique period), and of several sharing one key, the oldest.
macro_rules! movable {
    () => {
        concat!(
            "with candidates as (
                 select j.id, j.created_at,
                        row_number() over (
                            partition by j.name, coalesce(j.tenant_id, ''), j.idempotency_key
                            order by j.created_at, j.id
                        ) as nth",
            matched!(),
            " and not exists (
                     select 1 from x_jobs l
                     where l.name = j.name
                       and coalesce(l.tenant_id, '') = coalesce(j.tenant_id, '')
                       and l.idempotency_key = j.idempotency_key
                       and (l.state in ('ready', 'delayed', 'running', 'suspended')
                            or l.unique_until is not null)
                       and (l.state in ('ready', 'delayed', 'running', 'suspended')
                            or l.unique_until > ?5)
                       and l.id <> j.id
                 )
             ),
             movable as (select id, created_at from candidates where nth = 1) "
        )
    };
}

const REQUEUE_COUNT: &str = concat!(movable!(), "select count(*) from movable");

/// The history of the rows [`REQUEUE`] moves, written just before it.
const REQUEUE_HISTORY: &str = concat!(
    movable!(),
    "insert into x_job_history (job_id, tenant_id, at, actor, verb, detail)
     select j.id, j.tenant_id, ?5, ?7, 'requeue', 'bulk' from x_jobs j
     where j.id in (select id from movable order by created_at, id limit ?6 + 0)"
);

/// Clears the lapsed unique marks of the finished rows sharing a key with a row in state ?1
/// under the filters (those rows included), before [`REQUEUE`] revives rows of those keys: a
/// lapsed mark holds nothing, but keeps its row in the live-key index, where it would refuse
/// the revival.
const REQUEUE_LAPSE: &str = concat!(
    "update x_jobs set unique_until = null
     where (state in ('ready', 'delayed', 'running', 'suspended') or unique_until is not null)
       and unique_until <= ?5
       and state in ('done', 'failed', 'dead', 'cancelled')
       and exists (select 1",
    matched!(),
    " and j.name = x_jobs.name
          and coalesce(j.tenant_id, '') = coalesce(x_jobs.tenant_id, '')
          and j.idempotency_key = x_jobs.idempotency_key)"
);

const REQUEUE: &str = concat!(
    movable!(),
    "update x_jobs
     set state = 'ready', attempt = 0, run_at = ?5, visible_at = null, claimed_by = null,
         progress = null, result = null, updated_at = ?5
     where id in (select id from movable order by created_at, id limit ?6 + 0)"
);

const REMOVE_COUNT: &str = concat!("select count(*)", matched!());

/// The rows a removal takes this call.
macro_rules! picked {
    () => {
        concat!(
            "with picked as (select j.id, j.run_id",
            matched!(),
            " order by j.created_at, j.id limit ?6 + 0) "
        )
    };
}

/// The picked rows' steps, unless a job that stays shares the run.
const REMOVE_STEPS: &str = concat!(
    picked!(),
    "delete from x_job_steps
     where run_id in (select run_id from picked)
       and not exists (
           select 1 from x_jobs o
           where o.id = x_job_steps.run_id and o.run_id = x_job_steps.run_id
             and o.id not in (select id from picked)
       )
       and not exists (
           select 1 from x_jobs o
           where o.run_id = x_job_steps.run_id and o.run_id <> o.id
             and o.id not in (select id from picked)
       )"
);

/// The history of the rows [`REMOVE`] deletes, written just before it.
const REMOVE_HISTORY: &str = concat!(
    picked!(),
    "insert into x_job_history (job_id, tenant_id, at, actor, verb, detail)
     select j.id, j.tenant_id, ?5, ?7, 'remove', 'bulk' from x_jobs j
     where j.id in (select id from picked)"
);

const REMOVE: &str = concat!(
    picked!(),
    "delete from x_jobs where id in (select id from picked)"
);

/// Waiting rows: in state ?1 (delayed or ready) with a run time after now.
const PROMOTE_COUNT: &str = concat!("select count(*)", matched!(), " and j.run_at > ?5");

/// The history of the rows [`PROMOTE`] moves, written just before it.
const PROMOTE_HISTORY: &str = concat!(
    "insert into x_job_history (job_id, tenant_id, at, actor, verb, detail)
     select w.id, w.tenant_id, ?5, ?7, 'promote', 'bulk' from x_jobs w
     where w.id in (select j.id",
    matched!(),
    " and j.run_at > ?5 order by j.created_at, j.id limit ?6 + 0)"
);

const PROMOTE: &str = concat!(
    "update x_jobs set state = 'ready', run_at = ?5, updated_at = ?5
     where id in (select j.id",
    matched!(),
    " and j.run_at > ?5 order by j.created_at, j.id limit ?6 + 0)"
);

/// One statement with every bulk parameter bound.
fn bound<'q>(
    sql: &'static str,
    p: &'q JobBulkParams,
) -> sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments> {
    sqlx::query(sql)
        .bind(p.state.as_str())
        .bind(p.queue.as_deref())
        .bind(p.name.as_deref())
        .bind(p.tenant_id.as_deref())
        .bind(ts(p.now))
        .bind(i64::from(MAX_BULK_ROWS))
        .bind(p.actor.as_deref())
}

async fn count(
    tx: &mut SqliteConnection,
    sql: &'static str,
    p: &JobBulkParams,
    operation: Op,
) -> Result<u64, JobError> {
    let failed = |e| classify(operation, e);
    let row = bound(sql, p).fetch_one(&mut *tx).await.map_err(failed)?;
    let n: i64 = row.try_get(0).map_err(failed)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Runs `count_sql`, then `moves` (the last one's rows are the ones moved), in one
/// transaction.
async fn run(
    writer: &Writer,
    p: &JobBulkParams,
    count_sql: &'static str,
    moves: &[&'static str],
    operation: Op,
) -> Result<BulkResult, JobError> {
    let failed = |e| classify(operation, e);
    let mut conn = writer.acquire(operation).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    let total = count(&mut tx, count_sql, p, operation).await?;
    let mut affected = 0;
    for sql in moves {
        affected = bound(sql, p)
            .execute(&mut *tx)
            .await
            .map_err(failed)?
            .rows_affected();
    }
    tx.commit().await.map_err(failed)?;
    Ok(BulkResult {
        affected,
        remaining: total.saturating_sub(affected),
    })
}

pub(super) async fn requeue_many(
    writer: &Writer,
    p: &JobBulkParams,
) -> Result<BulkResult, JobError> {
    check_bulk_state(Bulk::Requeue, p.state)?;
    let moves = [REQUEUE_HISTORY, REQUEUE_LAPSE, REQUEUE];
    run(
        writer,
        p,
        REQUEUE_COUNT,
        &moves,
        Op::IntrospectJobRequeueMany,
    )
    .await
}

pub(super) async fn remove_many(
    writer: &Writer,
    p: &JobBulkParams,
) -> Result<BulkResult, JobError> {
    check_bulk_state(Bulk::Remove, p.state)?;
    run(
        writer,
        p,
        REMOVE_COUNT,
        &[REMOVE_HISTORY, REMOVE_STEPS, REMOVE],
        Op::IntrospectJobRemoveMany,
    )
    .await
}

pub(super) async fn promote_many(
    writer: &Writer,
    p: &JobBulkParams,
) -> Result<BulkResult, JobError> {
    check_bulk_state(Bulk::Promote, p.state)?;
    let moves = [PROMOTE_HISTORY, PROMOTE];
    run(
        writer,
        p,
        PROMOTE_COUNT,
        &moves,
        Op::IntrospectJobPromoteMany,
    )
    .await
}
