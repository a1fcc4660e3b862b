//! Dependencies between jobs on SQLite, as on Postgres (`driver/postgres/dependencies.rs`):
//! the dependent's enqueue judges where it starts in its own transaction; a settle of a job
//! with dependents notes it in `x_job_releases` (migration 0012's trigger) and answers
//! `has_dependents`, and the release pass then judges the blocked dependents, round by round
//! while a cancel notes more (and counts the group members a removal noted, `groups.rs`). SQLite runs one writer at a time, so each pass is one
//! transaction on the write connection, and no judging races another.

use std::collections::BTreeMap;

use sqlx::sqlite::{SqliteConnection, SqlitePool};
use sqlx::{Connection, Row};

use super::classify::{classify, Op};
use super::enqueue::{enqueue_started, Start};
use super::time::ts;
use super::writer::Writer;
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::error::JobError;

/// The jobs named (a JSON array of hex ids, ?1) that exist in the tenant ?2, with their states.
const NAMED: &str = "select id, state from x_jobs
    where id in (select unhex(value) from json_each(?1))
      and coalesce(tenant_id, '') = coalesce(?2, '')";

/// Marks the jobs ?1 (a JSON array of hex ids) as having dependents.
const MARK: &str = "update x_jobs set has_dependents = 1
    where id in (select unhex(value) from json_each(?1))";

/// The new dependent ?1's edges on the jobs ?2 (a JSON array of hex ids).
const LINK: &str = "insert or ignore into x_job_dependencies (job_id, depends_on)
    select ?1, unhex(value) from json_each(?2)";

/// Takes every settled job still to be judged.
const TAKE: &str = "delete from x_job_releases returning job_id";

/// The blocked dependents (suspended until ?2) of the settled jobs ?1 (a JSON array of hex
/// ids), each with its policy, its queue and every job it depends on with that job's state
/// (null: the row is gone).
const JUDGE: &str = "select d.id, d.queue, d.on_dependency_failure, e.depends_on,
        x.state as dependency_state
    from x_jobs d
    join x_job_dependencies e on e.job_id = d.id
    left join x_jobs x on x.id = e.depends_on
    where d.id in (
            select s.job_id from x_job_dependencies s
            where s.depends_on in (select unhex(value) from json_each(?1))
        )
      and d.state = 'suspended'
      and d.run_at = ?2
    order by d.id, e.depends_on";

/// A judged dependent ?1 becomes ready, due at ?2.
const RELEASE: &str = "update x_jobs set state = 'ready', run_at = ?2, updated_at = ?2
    where id = ?1 and state = 'suspended'";

/// A judged dependent ?1 is cancelled at ?2 with the error ?3 (text) and ?4 (code); with
/// dependents of its own it notes its release (the trigger), so the next round judges those.
const CANCEL: &str = "update x_jobs
    set state = 'cancelled', visible_at = null, updated_at = ?2,
        last_error = ?3, last_error_code = ?4
    where id = ?1 and state = 'suspended'";

/// A job's links: the jobs it depends on with their states and its policy, then (`by`) the
/// first ?2 jobs depending on it; then its groups' (migration 0014): the job that invoked it
/// (`parent`), the first ?2 it invoked in join order with their states (`child`), and its batch
/// (`batch`: one it is a member of, or whose callback it is).
const LINKS: &str = "select * from (
        select 'on' as kind, e.depends_on as id, x.state, j.on_dependency_failure as policy
        from x_job_dependencies e
        join x_jobs j on j.id = e.job_id
        left join x_jobs x on x.id = e.depends_on
        where e.job_id = ?1
        order by e.depends_on
    )
    union all
    select * from (
        select 'by', e.job_id, null, null
        from x_job_dependencies e
        where e.depends_on = ?1
        order by e.job_id
        limit ?2
    )
    union all
    select * from (
        select 'parent', g.parent_id, null, null
        from x_job_group_members m
        join x_job_groups g on g.id = m.group_id
        where m.job_id = ?1 and g.parent_id is not null
        order by g.created_at, g.id
        limit 1
    )
    union all
    select * from (
        select 'child', m.job_id, x.state, null
        from x_job_groups g
        join x_job_group_members m on m.group_id = g.id
        left join x_jobs x on x.id = m.job_id
        where g.parent_id = ?1
        order by g.created_at, g.id, m.position
        limit ?2
    )
    union all
    select * from (
        select 'batch', b.id, null, null
        from (
            select g.id, g.created_at
            from x_job_group_members m
            join x_job_groups g on g.id = m.group_id
            where m.job_id = ?1 and g.parent_id is null
            union all
            select g.id, g.created_at
            from x_job_groups g
            where g.waiter = ?1 and g.parent_id is null
        ) b
        order by b.created_at, b.id
        limit 1
    )";

/// Rounds one pass runs at most (each a cancel's cascade one level deeper).
const RELEASE_ROUNDS: usize = 64;

/// Ids as SQLite's statements take a list: a JSON array of hex ids, read with `json_each`.
pub(super) fn hex_ids(ids: &[JobId]) -> String {
    serde_json::Value::Array(
        ids.iter()
            .map(|id| serde_json::Value::String(id.simple().to_string()))
            .collect(),
    )
    .to_string()
}

/// Enqueues a job with dependencies in one transaction: read what it names, judge where it
/// starts, insert it (or answer the holder of its key), file its edges and mark what it names.
pub(crate) async fn enqueue_dependent(
    writer: &Writer,
    request: &EnqueueRequest,
    dependencies: &Dependencies,
) -> Result<EnqueueResult, JobError> {
    let now = request.now;
    check_dependencies(request.id, dependencies, request.run_at, now)?;
    let failed = |e| classify(Op::JobEnqueue, e);
    let named = hex_ids(&dependencies.on);
    let mut conn = writer.acquire(Op::JobEnqueue).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    let found: BTreeMap<JobId, JobState> = sqlx::query_as(NAMED)
        .bind(&named)
        .bind(&request.tenant_id)
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?
        .into_iter()
        .collect();
    // Refused, the transaction is dropped and rolls back: nothing was written.
    let start = dependencies.start_among(&found, request.run_at)?;
    let start = Start {
        state: start.state,
        run_at: start.run_at,
        last_error: start.last_error(),
        last_error_code: start.last_error_code(),
        on_dependency_failure: Some(dependencies.on_failure.as_str()),
    };
    let result = enqueue_started(&mut tx, request, now, Some(&start)).await?;
    if !result.deduped {
        sqlx::query(LINK)
            .bind(request.id)
            .bind(&named)
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        sqlx::query(MARK)
            .bind(&named)
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
    }
    tx.commit().await.map_err(failed)?;
    Ok(result)
}

/// The release pass after a settle that ended a job with dependents (or a verb that may have):
/// a failure is logged, never the settle's; what it left stays noted for the next pass.
pub(crate) async fn release_after(writer: &Writer, now: Timestamp) {
    if let Err(error) = release_pending(writer, now).await {
        tracing::warn!(
            code = error.code().map(|c| c.as_str()),
            "judging the dependents of settled jobs failed; they are judged at the next pass: {}",
            error.summary()
        );
    }
}

/// Judges the blocked dependents of every settled job noted in `x_job_releases`, in one
/// transaction, round by round.
pub(crate) async fn release_pending(writer: &Writer, now: Timestamp) -> Result<(), JobError> {
    let failed = |e| classify(Op::JobRelease, e);
    let mut conn = writer.acquire(Op::JobRelease).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    for _ in 0..RELEASE_ROUNDS {
        if !judge_round(&mut tx, now).await? {
            break;
        }
    }
    tx.commit().await.map_err(failed)
}

/// One round: takes what is noted and applies each blocked dependent's verdict; answers
/// whether anything was noted.
async fn judge_round(conn: &mut SqliteConnection, now: Timestamp) -> Result<bool, JobError> {
    let failed = |e| classify(Op::JobRelease, e);
    let taken: Vec<JobId> = sqlx::query_scalar(TAKE)
        .fetch_all(&mut *conn)
        .await
        .map_err(failed)?;
    if taken.is_empty() {
        return Ok(false);
    }
    let rows = sqlx::query(JUDGE)
        .bind(hex_ids(&taken))
        .bind(ts(blocked_until()))
        .fetch_all(&mut *conn)
        .await
        .map_err(failed)?;
    let mut judged: BTreeMap<JobId, (DependencyFailure, DependencyStates)> = BTreeMap::new();
    for row in &rows {
        let id: JobId = row.try_get("id").map_err(failed)?;
        let policy: Option<String> = row.try_get("on_dependency_failure").map_err(failed)?;
        let dependency: JobId = row.try_get("depends_on").map_err(failed)?;
        let state: Option<JobState> = row.try_get("dependency_state").map_err(failed)?;
        judged
            .entry(id)
            .or_insert_with(|| {
                let policy = DependencyFailure::from_stored(policy.as_deref().unwrap_or(""));
                (policy, Vec::new())
            })
            .1
            .push((dependency, state));
    }
    // The taken jobs that were group members removed while live count now (groups.rs).
    super::groups::count_removed(&mut *conn, &taken, now).await?;
    for (id, (policy, dependencies)) in judged {
        match Verdict::of(policy, dependencies) {
            Verdict::Blocked => {}
            Verdict::Release => {
                sqlx::query(RELEASE)
                    .bind(id)
                    .bind(ts(now))
                    .execute(&mut *conn)
                    .await
                    .map_err(failed)?;
            }
            cancel @ Verdict::Cancel { .. } => {
                let start = cancel.start(now);
                sqlx::query(CANCEL)
                    .bind(id)
                    .bind(ts(now))
                    .bind(start.last_error())
                    .bind(start.last_error_code())
                    .execute(&mut *conn)
                    .await
                    .map_err(failed)?;
            }
        }
    }
    Ok(true)
}

/// A job's links ([`JobLinks`]).
pub(crate) async fn links(reader: &SqlitePool, id: JobId) -> Result<JobLinks, JobError> {
    let failed = |e| classify(Op::JobGet, e);
    let rows: Vec<(String, JobId, Option<JobState>, Option<String>)> = sqlx::query_as(LINKS)
        .bind(id)
        .bind(MAX_DEPENDENCIES as i64)
        .fetch_all(reader)
        .await
        .map_err(failed)?;
    Ok(JobLinks::from_rows(rows))
}
