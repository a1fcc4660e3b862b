//! The claim: per queue, up to its free slots of due rows, fair across tenants, marked running
//! under the claimer, in one `BEGIN IMMEDIATE` transaction. SQLite lets one writer in at a
//! time, so what this transaction reads cannot be taken by another claimer (thread or process)
//! before it commits: the row locks Postgres needs (`FOR UPDATE SKIP LOCKED`) have no
//! counterpart here.
//!
//! The choice is the Postgres statement's, step by step: lapsed running rows with attempts left
//! compete for the slots, lapsed final attempts are buried (`dead`, or `failed` for the names
//! in `drop_exhausted`) without spending any; each tenant's due rows (at most the queue's slots),
//! highest priority first, then in due order, make its turns, visiting at most 64 tenants per queue from the claimer's
//! fairness cursor, wrapping around; the queue takes turn 1 of every tenant, then turn 2, ...
//! (within a turn, the higher priority, then the earlier due).
//! A paused queue yields nothing. Every read is an index walk of `x_jobs_fair_idx` or
//! `x_jobs_lapsed_idx` bounded by the slots.

use super::writer::Writer;
use std::collections::HashMap;

use sqlx::sqlite::SqliteConnection;
use sqlx::{Connection, FromRow, Row};

use super::classify::{classify, Op};
use super::job_columns;
use super::time::ts;
use crate::clock::{add, Timestamp};
use crate::driver::records::*;
use crate::error::{ErrorCode, JobError};

/// Tenants visited per queue per claim.
const TENANTS_PER_CLAIM: usize = 64;
/// Lapsed final attempts buried per queue per claim.
const BURIALS_PER_CLAIM: i64 = 100;

/// One row the claim may take: its tenant, its priority, when it fell due (the stored form
/// sorts by time) and its id.
struct Candidate {
    tenant: String,
    priority: i64,
    due: String,
    id: JobId,
}

pub(crate) async fn claim(writer: &Writer, params: &ClaimParams) -> Result<ClaimResult, JobError> {
    if params.demand.is_empty() {
        return Err(JobError::new(
            ErrorCode::JobClaimQueuesEmpty,
            "a claim named no queue",
        ));
    }
    let failed = |e| classify(Op::JobClaim, e);
    let mut conn = writer.acquire(Op::JobClaim).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    let mut chosen: Vec<JobId> = Vec::new();
    let mut exhausted: Vec<JobId> = Vec::new();
    for demand in &params.demand {
        let survey = survey(
            &mut tx,
            &demand.queue,
            demand.limit,
            &params.fair_after,
            params.now,
        )
        .await?;
        if survey.paused {
            continue;
        }
        exhausted.extend(survey.exhausted);
        if demand.limit == 0 {
            continue;
        }
        let slots = i64::from(demand.limit);
        let mut candidates = survey.lapsed;
        let seeded = tenants(
            &mut tx,
            &demand.queue,
            &params.fair_after,
            params.now,
            survey.past_cursor,
            survey.from_start,
        )
        .await?;
        for tenant in seeded {
            candidates.extend(queued(&mut tx, &demand.queue, tenant, slots, params.now).await?);
        }
        chosen.extend(take_turns(candidates, demand.limit as usize));
    }
    let mut result = ClaimResult::default();
    // Only a burial reads the names whose final attempts end `failed`.
    let dropped = if exhausted.is_empty() {
        String::new()
    } else {
        serde_json::to_string(&params.drop_exhausted).unwrap_or_else(|_| "[]".into())
    };
    for id in exhausted {
        let row = sqlx::query(concat!(
            "update x_jobs
             set state = case when name in (select value from json_each(?2)) then 'failed' else 'dead' end,
                 visible_at = null,
                 last_error = ?4,
                 last_error_code = null,
                 updated_at = ?3
             where id = ?1
             returning ",
            job_columns!()
        ))
        .bind(id)
        .bind(&dropped)
        .bind(ts(params.now))
        .bind(LEASE_LAPSED_FINAL_ATTEMPT)
        .fetch_one(&mut *tx)
        .await
        .map_err(failed)?;
        result
            .exhausted
            .push(JobRecord::from_row(&row).map_err(failed)?);
    }
    let visible_at = add(params.now, params.visibility_timeout);
    if !chosen.is_empty() {
        let ids: Vec<String> = chosen.iter().map(|id| id.simple().to_string()).collect();
        let ids = serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
        let rows = sqlx::query(MARK)
            .bind(ids)
            .bind(&params.worker_id)
            .bind(ts(visible_at))
            .bind(ts(params.now))
            .fetch_all(&mut *tx)
            .await
            .map_err(failed)?;
        for row in &rows {
            let record = JobRecord::from_row(row).map_err(failed)?;
            let has_steps: bool = row.try_get("has_steps").map_err(failed)?;
            result.jobs.push(ClaimedJob::from_claimed_row(
                record, has_steps, params, visible_at,
            ));
        }
    }
    tx.commit().await.map_err(failed)?;
    result.jobs.sort_by_key(|j| j.id);
    Ok(result)
}

/// Each tenant's candidates, highest priority first, then in due order, make its turns (at
/// most `slots` of them); the queue takes turn 1 of every tenant, then turn 2, ... (within a
/// turn, the higher priority, then the earlier due) until `slots` are taken.
fn take_turns(mut candidates: Vec<Candidate>, slots: usize) -> Vec<JobId> {
    candidates.sort_by(|a, b| {
        (&a.tenant, -a.priority, &a.due, a.id).cmp(&(&b.tenant, -b.priority, &b.due, b.id))
    });
    let mut turns: HashMap<&str, usize> = HashMap::new();
    let mut ranked: Vec<(usize, i64, &str, JobId)> = Vec::new();
    for c in &candidates {
        let turn = turns.entry(c.tenant.as_str()).or_insert(0);
        *turn += 1;
        if *turn <= slots {
            ranked.push((*turn, -c.priority, c.due.as_str(), c.id));
        }
    }
    ranked.sort();
    ranked
        .into_iter()
        .take(slots)
        .map(|(_, _, _, id)| id)
        .collect()
}

/// The claim's statements over one queue: whether it is paused, its lapsed final attempts to
/// bury (at most [`BURIALS_PER_CLAIM`]), its lapsed rows with attempts left, and the first
/// tenant with due rows past the fairness cursor and the first from the start up to it (whose
/// rows [`queued`] reads, class by class). One statement; every part is an index seek
/// (`x_job_pauses`' key, `x_jobs_lapsed_idx`, `x_jobs_fair_idx`).
const SURVEY: &str = "select 'p' as kind, null as id, null as due, null as tenant,
        null as priority
        from x_job_pauses where queue = ?1
    union all
    select * from (
        select 'x', id, visible_at, coalesce(tenant_id, ''), priority from x_jobs
        where queue = ?1 and state = 'running' and visible_at <= ?2
          and attempt >= max_attempts
        order by visible_at, id
        limit ?3 + 0
    )
    union all
    select * from (
        select 'l', id, visible_at, coalesce(tenant_id, ''), priority from x_jobs
        where queue = ?1 and state = 'running' and visible_at <= ?2
          and attempt < max_attempts
        order by visible_at, id
        limit ?4 + 0
    )
    union all
    select * from (
        select 'a', null, null, coalesce(tenant_id, ''), null from x_jobs
        where queue = ?1 and state in ('ready', 'delayed', 'suspended') and run_at <= ?2
          and coalesce(tenant_id, '') > ?5
        order by coalesce(tenant_id, '')
        limit 1
    )
    union all
    select * from (
        select 'b', null, null, coalesce(tenant_id, ''), null from x_jobs
        where queue = ?1 and state in ('ready', 'delayed', 'suspended') and run_at <= ?2
          and coalesce(tenant_id, '') <= ?5
        order by coalesce(tenant_id, '')
        limit 1
    )";

/// The claim marks its chosen rows, given as a JSON array of hex ids, in one statement.
const MARK: &str = concat!(
    "update x_jobs
     set state = 'running', attempt = attempt + 1, claims = claims + 1,
         claimed_by = ?2, visible_at = ?3, updated_at = ?4, started_at = ?4
     from (select unhex(value) as chosen_id from json_each(?1)) chosen
     where x_jobs.id = chosen.chosen_id
     returning ",
    job_columns!(),
    ", exists (select 1 from x_job_steps s where s.run_id = x_jobs.run_id) as has_steps"
);

/// What [`SURVEY`] read of one queue.
#[derive(Default)]
struct Survey {
    paused: bool,
    exhausted: Vec<JobId>,
    lapsed: Vec<Candidate>,
    /// The first tenant past the cursor with due rows.
    past_cursor: Option<String>,
    /// The first tenant from the start, up to the cursor, with due rows.
    from_start: Option<String>,
}

async fn survey(
    tx: &mut SqliteConnection,
    queue: &str,
    limit: u32,
    cursor: &str,
    now: Timestamp,
) -> Result<Survey, JobError> {
    let failed = |e| classify(Op::JobClaim, e);
    let rows = sqlx::query(SURVEY)
        .bind(queue)
        .bind(ts(now))
        .bind(BURIALS_PER_CLAIM)
        .bind(i64::from(limit))
        .bind(cursor)
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?;
    let mut survey = Survey::default();
    for row in &rows {
        let kind: String = row.try_get("kind").map_err(failed)?;
        match kind.as_str() {
            "p" => survey.paused = true,
            "x" => survey.exhausted.push(row.try_get("id").map_err(failed)?),
            "l" => survey.lapsed.push(candidate(row)?),
            "a" => survey.past_cursor = Some(row.try_get("tenant").map_err(failed)?),
            "b" => survey.from_start = Some(row.try_get("tenant").map_err(failed)?),
            _ => {}
        }
    }
    Ok(survey)
}

/// The next priority class below ?3 (highest first) in which the tenant has queued rows, due
/// or not: one seek of `x_jobs_fair_idx`.
const NEXT_CLASS: &str = "select priority from x_jobs
     where queue = ?1 and coalesce(tenant_id, '') = ?2
       and state in ('ready', 'delayed', 'suspended') and priority < ?3
     order by priority desc
     limit 1";

/// One class's due rows, oldest first: a seek bounded by `run_at <= now`, so its rows not yet
/// due are never walked.
const CLASS_ROWS: &str = "select id, run_at as due, coalesce(tenant_id, '') as tenant, priority
     from x_jobs
     where queue = ?1 and coalesce(tenant_id, '') = ?2 and priority = ?3
       and state in ('ready', 'delayed', 'suspended') and run_at <= ?4
     order by run_at, id
     limit ?5 + 0";

/// A tenant's due rows in its claim order, at most `slots`: class by class from the highest
/// priority, each found by [`NEXT_CLASS`] and read by [`CLASS_ROWS`], until `slots` are found.
async fn queued(
    tx: &mut SqliteConnection,
    queue: &str,
    tenant: String,
    slots: i64,
    now: Timestamp,
) -> Result<Vec<Candidate>, JobError> {
    let failed = |e| classify(Op::JobClaim, e);
    let mut found = Vec::new();
    let mut above = i64::from(MAX_PRIORITY) + 1;
    while (found.len() as i64) < slots {
        let class: Option<i64> = sqlx::query_scalar(NEXT_CLASS)
            .bind(queue)
            .bind(&tenant)
            .bind(above)
            .fetch_optional(&mut *tx)
            .await
            .map_err(failed)?;
        let Some(class) = class else { break };
        let rows = sqlx::query(CLASS_ROWS)
            .bind(queue)
            .bind(&tenant)
            .bind(class)
            .bind(ts(now))
            .bind(slots - found.len() as i64)
            .fetch_all(&mut *tx)
            .await
            .map_err(failed)?;
        for row in &rows {
            found.push(candidate(row)?);
        }
        above = class;
    }
    Ok(found)
}

fn candidate(row: &sqlx::sqlite::SqliteRow) -> Result<Candidate, JobError> {
    let failed = |e| classify(Op::JobClaim, e);
    Ok(Candidate {
        id: row.try_get("id").map_err(failed)?,
        due: row.try_get("due").map_err(failed)?,
        tenant: row.try_get("tenant").map_err(failed)?,
        priority: row.try_get("priority").map_err(failed)?,
    })
}

/// The tenants with due rows in `queue`, at most [`TENANTS_PER_CLAIM`], in tenant order from
/// just after `cursor`, wrapping around to the start and up to `cursor` itself (the survey
/// found the first tenant of each side). Each further probe is one seek of `x_jobs_fair_idx` by (queue, tenant range): the bounds are plain
/// comparisons, never `? is null or ...`, which would turn the seek into a walk of the queue.
async fn tenants(
    tx: &mut SqliteConnection,
    queue: &str,
    cursor: &str,
    now: Timestamp,
    past_cursor: Option<String>,
    from_start: Option<String>,
) -> Result<Vec<String>, JobError> {
    let mut found: Vec<String> = Vec::new();
    // Past the cursor (the survey found the first, or there is none).
    if let Some(tenant) = past_cursor {
        found.push(tenant);
        while found.len() < TENANTS_PER_CLAIM {
            let after = found.last().map_or(cursor, String::as_str);
            let Some(next) = probe(tx, NEXT_AFTER, queue, now, &[after]).await? else {
                break;
            };
            found.push(next);
        }
    }
    // From the start, up to the cursor (the survey found the first, or there is none).
    if found.len() < TENANTS_PER_CLAIM {
        if let Some(first) = from_start {
            let mut after = first.clone();
            found.push(first);
            // Past the cursor itself the range (after, cursor] is empty.
            while found.len() < TENANTS_PER_CLAIM && after.as_str() < cursor {
                let next = probe(tx, NEXT_AFTER_UPTO, queue, now, &[&after, cursor]).await?;
                let Some(next) = next else { break };
                after = next.clone();
                found.push(next);
            }
        }
    }
    Ok(found)
}

const NEXT_AFTER: &str = "select coalesce(tenant_id, '') from x_jobs
     where queue = ?1 and state in ('ready', 'delayed', 'suspended') and run_at <= ?2
       and coalesce(tenant_id, '') > ?3
     order by coalesce(tenant_id, '')
     limit 1";

const NEXT_AFTER_UPTO: &str = "select coalesce(tenant_id, '') from x_jobs
     where queue = ?1 and state in ('ready', 'delayed', 'suspended') and run_at <= ?2
       and coalesce(tenant_id, '') > ?3 and coalesce(tenant_id, '') <= ?4
     order by coalesce(tenant_id, '')
     limit 1";

/// One tenant probe: `statement` binds the queue and now as ?1 and ?2, then its tenant bounds
/// in order (a lower bound is exclusive, an upper one inclusive).
async fn probe(
    tx: &mut SqliteConnection,
    statement: &'static str,
    queue: &str,
    now: Timestamp,
    bounds: &[&str],
) -> Result<Option<String>, JobError> {
    let mut query = sqlx::query_scalar(statement).bind(queue).bind(ts(now));
    for bound in bounds {
        query = query.bind(*bound);
    }
    query
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| classify(Op::JobClaim, e))
}
