//! Enqueue: one insert that yields to a holder of the job's key, then the holder lookup.
//! SQLite runs one writer at a time, so between the insert and the lookup only a commit of
//! another process can intervene (a holder finishing): the lookup then finds nothing and the
//! insert runs again, three rounds at most, as on Postgres.
//!
//! A key's holder is a live row, or a finished one inside its unique period (`unique_until`
//! after now, migration 0010); a finished row whose period lapsed holds nothing, but its mark
//! keeps it in the live-key index, where it refuses the insert: the lookup clears that mark
//! first ([`LAPSE`]), so the next round inserts.

use std::collections::HashSet;

use sqlx::sqlite::SqliteConnection;
use sqlx::{Connection, Row};

use super::classify::{classify, Op};
use super::time::{self, ts};
use super::writer::Writer;
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::error::JobError;

/// Inserts the job unless a row already has its id or a row of the live-key index holds its
/// (name, tenant, key): `on conflict do nothing` covers the primary key and the live-key unique
/// index alike. ?14: the row's `unique_until` (null: no unique period).
const INSERT: &str = "insert into x_jobs (
        id, run_id, name, queue, input, idempotency_key, tenant_id, state,
        max_attempts, run_at, created_at, updated_at, traceparent, actor, priority, unique_until
    )
    values (?1, ?2, ?3, ?4, ?5, ?6, ?7,
        case when ?9 <= ?10 then 'ready' else 'delayed' end,
        ?8, ?9, ?10, ?10, ?11, ?12, ?13, ?14)
    on conflict do nothing
    returning id, run_id";

/// [`INSERT`] for a job whose start was judged before (a dependent: `dependencies.rs`): its
/// state ?15, with the error ?16 / ?17 a cancelled one carries and its policy ?18.
const INSERT_STARTED: &str = "insert into x_jobs (
        id, run_id, name, queue, input, idempotency_key, tenant_id, state,
        max_attempts, run_at, created_at, updated_at, traceparent, actor, priority, unique_until,
        last_error, last_error_code, on_dependency_failure
    )
    values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?15,
        ?8, ?9, ?10, ?10, ?11, ?12, ?13, ?14, ?16, ?17, ?18)
    on conflict do nothing
    returning id, run_id";

/// Where a job whose start was judged before it is inserted begins ([`INSERT_STARTED`]).
pub(crate) struct Start {
    pub state: JobState,
    pub run_at: Timestamp,
    pub last_error: Option<String>,
    pub last_error_code: Option<&'static str>,
    pub on_dependency_failure: Option<&'static str>,
}

/// Clears the lapsed unique marks of a key (name ?1, tenant ?2, key ?3) as of ?4: a finished row
/// whose period ended holds its key no longer, but its mark would keep refusing the insert.
/// (The live-key index's predicate, spelled as written, lets SQLite probe the partial index.)
pub(crate) const LAPSE: &str = "update x_jobs set unique_until = null
    where name = ?1 and coalesce(tenant_id, '') = coalesce(?2, '') and idempotency_key = ?3
      and (state in ('ready', 'delayed', 'running', 'suspended') or unique_until is not null)
      and unique_until <= ?4
      and state in ('done', 'failed', 'dead', 'cancelled')";

/// The row that holds the job: the request's own id first (an outbox re-publish), else the
/// row holding (name, tenant, key) at ?5: a live one, or a finished one inside its unique
/// period.
const HOLDER: &str = "select id, run_id, state, id = ?1 as same_id from (
        select id, run_id, state, 0 as rank from x_jobs where id = ?1
        union all
        select id, run_id, state, 1 as rank from x_jobs
        where name = ?2 and coalesce(tenant_id, '') = coalesce(?3, '') and idempotency_key = ?4
          and (state in ('ready', 'delayed', 'running', 'suspended') or unique_until is not null)
          and (state in ('ready', 'delayed', 'running', 'suspended') or unique_until > ?5)
    )
    order by rank
    limit 1";

/// Debounce: the live holder of the key, another job still queued, takes the request's input
/// and run time; one that started meanwhile is left as it is.
const REPLACE_QUEUED: &str = "update x_jobs
    set input = ?2, run_at = ?3,
        state = case when ?3 <= ?4 then 'ready' else 'delayed' end,
        updated_at = ?4
    where id = ?1 and state in ('ready', 'delayed')";

/// Inserts `request` as of `now` (its own, or its batch's) on `conn`.
pub(crate) async fn enqueue_on(
    conn: &mut SqliteConnection,
    request: &EnqueueRequest,
    now: Timestamp,
) -> Result<EnqueueResult, JobError> {
    enqueue_started(conn, request, now, None).await
}

/// [`enqueue_on`], starting the job as `start` says when given.
pub(crate) async fn enqueue_started(
    conn: &mut SqliteConnection,
    request: &EnqueueRequest,
    now: Timestamp,
    start: Option<&Start>,
) -> Result<EnqueueResult, JobError> {
    let failed = |e| classify(Op::JobEnqueue, e);
    for _ in 0..ENQUEUE_ROUNDS {
        let statement = if start.is_some() {
            INSERT_STARTED
        } else {
            INSERT
        };
        let mut insert = bind_job(sqlx::query(statement), request)
            .bind(ts(start.map_or(request.run_at, |s| s.run_at)))
            .bind(ts(now))
            .bind(&request.traceparent)
            .bind(&request.actor)
            .bind(request.priority)
            .bind(ts(request.unique_until(now)));
        if let Some(start) = start {
            insert = insert
                .bind(start.state.as_str())
                .bind(&start.last_error)
                .bind(start.last_error_code)
                .bind(start.on_dependency_failure);
        }
        // Stepped to its end: see the module's note on auto-checkpoints.
        let inserted = insert.fetch_all(&mut *conn).await.map_err(failed)?;
        if let Some(row) = inserted.first() {
            return Ok(EnqueueResult {
                id: row.try_get("id").map_err(failed)?,
                run_id: row.try_get("run_id").map_err(failed)?,
                deduped: false,
            });
        }
        lapse(conn, request, now, Op::JobEnqueue).await?;
        let holder = sqlx::query(HOLDER)
            .bind(request.id)
            .bind(&request.name)
            .bind(&request.tenant_id)
            .bind(&request.idempotency_key)
            .bind(ts(now))
            .fetch_optional(&mut *conn)
            .await
            .map_err(failed)?;
        let Some(row) = holder else { continue };
        let id: JobId = row.try_get("id").map_err(failed)?;
        let same_id: bool = row.try_get("same_id").map_err(failed)?;
        let state: JobState = row.try_get("state").map_err(failed)?;
        if EnqueueResult::replaces(request, same_id, state) {
            sqlx::query(REPLACE_QUEUED)
                .bind(id)
                .bind(&request.input)
                .bind(ts(request.run_at))
                .bind(ts(now))
                .execute(&mut *conn)
                .await
                .map_err(failed)?;
        }
        return EnqueueResult::held(request, id, row.try_get("run_id").map_err(failed)?, same_id);
    }
    Err(EnqueueResult::key_kept_moving(request))
}

/// Clears the lapsed unique marks of `request`'s key as of `now` ([`LAPSE`]), for `op`.
pub(crate) async fn lapse(
    conn: &mut SqliteConnection,
    request: &EnqueueRequest,
    now: Timestamp,
    op: Op,
) -> Result<(), JobError> {
    sqlx::query(LAPSE)
        .bind(&request.name)
        .bind(&request.tenant_id)
        .bind(&request.idempotency_key)
        .bind(ts(now))
        .execute(&mut *conn)
        .await
        .map_err(|e| classify(op, e))?;
    Ok(())
}

/// A batch in one statement: each request is an element of a JSON array (`[id hex, run id
/// hex, name, queue, input as JSON text, key, tenant, max attempts, run at, traceparent,
/// actor, priority, unique_until]`), inserted in the array's order (`json_each` yields it in order), so a key that two
/// requests share goes to the first, as one insert after another would. Rows that meet a
/// holder insert nothing and are not returned. (`where true` lets SQLite's parser read the
/// `on conflict` as the upsert clause.)
const INSERT_MANY: &str = "insert into x_jobs (
        id, run_id, name, queue, input, idempotency_key, tenant_id, state,
        max_attempts, run_at, created_at, updated_at, traceparent, actor, priority, unique_until
    )
    select unhex(value ->> 0), unhex(value ->> 1), value ->> 2, value ->> 3, value ->> 4,
        value ->> 5, value ->> 6,
        case when value ->> 8 <= ?2 then 'ready' else 'delayed' end,
        value ->> 7, value ->> 8, ?2, ?2, value ->> 9, value ->> 10, value ->> 11, value ->> 12
    from json_each(?1)
    where true
    on conflict do nothing
    returning id";

/// Many jobs in one transaction, all stored at the batch's one `now` (the latest of its
/// requests'): all of them or none. One statement inserts every row that meets no holder;
/// each of the others then takes the single enqueue's path (the holder lookup), in the same
/// transaction.
pub(crate) async fn enqueue_many(
    writer: &Writer,
    requests: &[EnqueueRequest],
) -> Result<Vec<EnqueueResult>, JobError> {
    check_batch_without_dependencies(requests)?;
    let Some(now) = requests.iter().map(|r| r.now).max() else {
        return Ok(Vec::new());
    };
    let failed = |e| classify(Op::JobEnqueueMany, e);
    let batch: Vec<serde_json::Value> = requests
        .iter()
        .map(|r| {
            serde_json::json!([
                r.id.simple().to_string(),
                r.run_id.simple().to_string(),
                r.name,
                r.queue,
                r.input.to_string(),
                r.idempotency_key,
                r.tenant_id,
                r.max_attempts,
                time::format(r.run_at),
                r.traceparent,
                r.actor,
                r.priority,
                r.unique_until(now).map(time::format),
            ])
        })
        .collect();
    let batch = serde_json::Value::Array(batch).to_string();
    let mut conn = writer.acquire(Op::JobEnqueueMany).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    let mut inserted: HashSet<JobId> = sqlx::query_scalar(INSERT_MANY)
        .bind(batch)
        .bind(ts(now))
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?
        .into_iter()
        .collect();
    let mut out = Vec::with_capacity(requests.len());
    for request in requests {
        // `remove`: a second request with the same id is the first one's re-publish.
        if inserted.remove(&request.id) {
            out.push(EnqueueResult {
                id: request.id,
                run_id: request.run_id,
                deduped: false,
            });
        } else {
            out.push(enqueue_on(&mut tx, request, now).await?);
        }
    }
    tx.commit().await.map_err(failed)?;
    Ok(out)
}

/// Binds a job's first eight columns (`id, run_id, name, queue, input, idempotency_key,
/// tenant_id, max_attempts`), in that order, as every statement that writes a job row takes
/// them: the enqueue, the outbox's stage and a task's fire.
pub(super) fn bind_job<'q>(
    query: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
    request: &'q EnqueueRequest,
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    query
        .bind(request.id)
        .bind(request.run_id)
        .bind(&request.name)
        .bind(&request.queue)
        .bind(&request.input)
        .bind(&request.idempotency_key)
        .bind(&request.tenant_id)
        .bind(i64::from(request.max_attempts))
}
