//! The claim: per queue, up to its free slots of due rows, fair across tenants, marked running
//! under the claimer, in one `BEGIN IMMEDIATE` transaction. SQLite lets one writer in at a
//! time, so what this transaction reads cannot be taken by another claimer (thread or process)
//! before it commits: the row locks Postgres needs (`FOR UPDATE SKIP LOCKED`) have no
//! counterpart here.
//!
//! The choice is the Postgres statement's, step by step: lapsed running rows with attempts left
//! compete for the slots, lapsed final attempts are buried (`dead`, or `failed` for the names
//! in `drop_exhausted`) without spending any; each tenant's due rows (at most the queue's slots)
//! in due order make its turns, visiting at most 64 tenants per queue from the claimer's
//! fairness cursor, wrapping around; the queue takes turn 1 of every tenant, then turn 2, ...
//! A paused queue yields nothing. Every read is an index walk of `x_jobs_fair_idx` or
//! `x_jobs_lapsed_idx` bounded by the slots.
//!
//! Each statement is a round trip to sqlx's connection thread, the claim's main cost on one
//! host, so a queue is read with two statements (its pause and lapsed rows; its tenants' heads)
//! and the chosen rows are marked, and burials made, with one statement each.

use std::collections::HashMap;

use sqlx::sqlite::{SqliteConnection, SqlitePool};
use sqlx::{Connection, FromRow, Row};

use super::classify::classify;
use super::job_columns;
use super::time::ts;
use crate::clock::{add, Timestamp};
use crate::driver::records::*;
use crate::error::{ErrorCode, JobError};

/// Tenants visited per queue per claim.
const TENANTS_PER_CLAIM: usize = 64;
/// Lapsed final attempts buried per queue per claim.
const BURIALS_PER_CLAIM: i64 = 100;

/// One row the claim may take: its tenant, when it fell due (the stored form sorts by time)
/// and its id.
struct Candidate {
    tenant: String,
    due: String,
    id: JobId,
}

pub(crate) async fn claim(
    writer: &SqlitePool,
    params: &ClaimParams,
) -> Result<ClaimResult, JobError> {
    if params.demand.is_empty() {
        return Err(JobError::new(
            ErrorCode::JobClaimQueuesEmpty,
            "a claim named no queue",
        ));
    }
    let failed = |e| classify("job_claim", e);
    let mut conn = writer.acquire().await.map_err(failed)?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    let mut chosen: Vec<JobId> = Vec::new();
    let mut exhausted: Vec<JobId> = Vec::new();
    for demand in &params.demand {
        let slots = i64::from(demand.limit);
        let Some(lapsed) = lapsed(&mut tx, &demand.queue, slots, params.now).await? else {
            continue; // paused
        };
        exhausted.extend(lapsed.finals);
        if demand.limit == 0 {
            continue;
        }
        let mut candidates = lapsed.retries;
        candidates.extend(
            queued(
                &mut tx,
                &demand.queue,
                &params.fair_after,
                slots,
                params.now,
            )
            .await?,
        );
        chosen.extend(take_turns(candidates, demand.limit as usize));
    }
    let mut result = ClaimResult::default();
    // Only a burial reads the names whose final attempts end `failed`.
    let dropped = if exhausted.is_empty() {
        String::new()
    } else {
        serde_json::to_string(&params.drop_exhausted).unwrap_or_else(|_| "[]".into())
    };
    if !exhausted.is_empty() {
        let rows = sqlx::query(concat!(
            "update x_jobs
             set state = case when name in (select value from json_each(?2)) then 'failed' else 'dead' end,
                 visible_at = null,
                 last_error = ?4,
                 last_error_code = null,
                 updated_at = ?3
             where id in (select unhex(value) from json_each(?1))
             returning ",
            job_columns!()
        ))
        .bind(id_list(&exhausted))
        .bind(&dropped)
        .bind(ts(params.now))
        .bind(LEASE_LAPSED_FINAL_ATTEMPT)
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?;
        for row in &rows {
            result
                .exhausted
                .push(JobRecord::from_row(row).map_err(failed)?);
        }
    }
    let visible_at = add(params.now, params.visibility_timeout);
    let rows = if chosen.is_empty() {
        Vec::new()
    } else {
        sqlx::query(concat!(
            "update x_jobs
             set state = 'running', attempt = attempt + 1, claims = claims + 1,
                 claimed_by = ?2, visible_at = ?3, updated_at = ?4, started_at = ?4
             where id in (select unhex(value) from json_each(?1))
             returning ",
            job_columns!(),
            ", exists (select 1 from x_job_steps s where s.run_id = x_jobs.run_id) as has_steps"
        ))
        .bind(id_list(&chosen))
        .bind(&params.worker_id)
        .bind(ts(visible_at))
        .bind(ts(params.now))
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?
    };
    for row in &rows {
        let record = JobRecord::from_row(row).map_err(failed)?;
        let has_steps: bool = row.try_get("has_steps").map_err(failed)?;
        result.jobs.push(ClaimedJob {
            id: record.id,
            run_id: record.run_id,
            name: record.name,
            queue: record.queue,
            input: record.input,
            attempt: record.attempt,
            max_attempts: record.max_attempts,
            tenant_id: record.tenant_id,
            by: ClaimIdentity {
                worker_id: params.worker_id.clone(),
                claim: record.claims,
            },
            visible_at,
            traceparent: record.traceparent,
            actor: record.actor,
            has_steps,
        });
    }
    tx.commit().await.map_err(failed)?;
    result.jobs.sort_by_key(|j| j.id);
    Ok(result)
}

/// Each tenant's candidates in due order make its turns (at most `slots` of them); the queue
/// takes turn 1 of every tenant, then turn 2, ... until `slots` are taken.
fn take_turns(mut candidates: Vec<Candidate>, slots: usize) -> Vec<JobId> {
    candidates.sort_by(|a, b| (&a.tenant, &a.due, a.id).cmp(&(&b.tenant, &b.due, b.id)));
    let mut turns: HashMap<&str, usize> = HashMap::new();
    let mut ranked: Vec<(usize, &str, JobId)> = Vec::new();
    for c in &candidates {
        let turn = turns.entry(c.tenant.as_str()).or_insert(0);
        *turn += 1;
        if *turn <= slots {
            ranked.push((*turn, c.due.as_str(), c.id));
        }
    }
    ranked.sort();
    ranked
        .into_iter()
        .take(slots)
        .map(|(_, _, id)| id)
        .collect()
}

/// Ids as the statements take them: a JSON array of hex strings (`unhex` turns each back into
/// the stored 16-byte blob), so a batch is one bound value and one statement.
fn id_list(ids: &[JobId]) -> String {
    serde_json::Value::Array(
        ids.iter()
            .map(|id| serde_json::Value::String(id.simple().to_string()))
            .collect(),
    )
    .to_string()
}

/// The queue's lapsed running rows: final attempts to bury (at most [`BURIALS_PER_CLAIM`]) and
/// rows with attempts left (at most `slots`), oldest lapse first, both walks of
/// `x_jobs_lapsed_idx`, read with the queue's pause in one statement. `None`: the queue is
/// paused.
struct Lapsed {
    finals: Vec<JobId>,
    retries: Vec<Candidate>,
}

const LAPSED: &str = "select 0 as kind, null as id, null as due, null as tenant
     where exists (select 1 from x_job_pauses where queue = ?1)
     union all
     select * from (
         select 1, id, visible_at, coalesce(tenant_id, '') from x_jobs
         where queue = ?1 and state = 'running' and visible_at <= ?2
           and attempt >= max_attempts
         order by visible_at, id
         limit ?3)
     union all
     select * from (
         select 2, id, visible_at, coalesce(tenant_id, '') from x_jobs
         where queue = ?1 and state = 'running' and visible_at <= ?2
           and attempt < max_attempts
         order by visible_at, id
         limit ?4)";

async fn lapsed(
    tx: &mut SqliteConnection,
    queue: &str,
    slots: i64,
    now: Timestamp,
) -> Result<Option<Lapsed>, JobError> {
    let failed = |e| classify("job_claim", e);
    let rows = sqlx::query(LAPSED)
        .bind(queue)
        .bind(ts(now))
        .bind(BURIALS_PER_CLAIM)
        .bind(slots)
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?;
    let mut lapsed = Lapsed {
        finals: Vec::new(),
        retries: Vec::new(),
    };
    for row in &rows {
        match row.try_get::<i64, _>("kind").map_err(failed)? {
            0 => return Ok(None),
            1 => lapsed.finals.push(row.try_get("id").map_err(failed)?),
            _ => lapsed.retries.push(candidate(row)?),
        }
    }
    Ok(Some(lapsed))
}

/// Each visited tenant's due rows, at most `slots` per tenant, in one statement: the tenants
/// with due rows in `queue`, at most [`TENANTS_PER_CLAIM`], in tenant order from just after
/// `cursor`, wrapping around to the start and up to `cursor` itself, then each one's head.
/// Every tenant step is one seek of `x_jobs_fair_idx` by (queue, tenant range), a loose index
/// scan written as a recursive CTE; the bounds are plain comparisons, never `? is null or ...`,
/// which would turn the seek into a walk of the queue. Each tenant's head is one more seek.
const QUEUED: &str = "with recursive
     after(tenant, n) as (
         select (select coalesce(tenant_id, '') from x_jobs
                 where queue = ?1 and state in ('ready', 'delayed', 'suspended') and run_at <= ?2
                   and coalesce(tenant_id, '') > ?3
                 order by coalesce(tenant_id, '') limit 1), 1
         union all
         select (select coalesce(tenant_id, '') from x_jobs
                 where queue = ?1 and state in ('ready', 'delayed', 'suspended') and run_at <= ?2
                   and coalesce(tenant_id, '') > after.tenant
                 order by coalesce(tenant_id, '') limit 1), after.n + 1
         from after where after.tenant is not null and after.n < ?5
     ),
     found(k) as (select count(*) from after where tenant is not null),
     upto(tenant, n) as (
         select (select coalesce(tenant_id, '') from x_jobs
                 where queue = ?1 and state in ('ready', 'delayed', 'suspended') and run_at <= ?2
                   and coalesce(tenant_id, '') <= ?3
                 order by coalesce(tenant_id, '') limit 1), (select k from found) + 1
         where (select k from found) < ?5
         union all
         select (select coalesce(tenant_id, '') from x_jobs
                 where queue = ?1 and state in ('ready', 'delayed', 'suspended') and run_at <= ?2
                   and coalesce(tenant_id, '') > upto.tenant and coalesce(tenant_id, '') <= ?3
                 order by coalesce(tenant_id, '') limit 1), upto.n + 1
         from upto where upto.tenant is not null and upto.n < ?5
     ),
     visited(tenant) as (
         select tenant from after where tenant is not null
         union all
         select tenant from upto where tenant is not null
     )
     select j.id, j.run_at as due, coalesce(j.tenant_id, '') as tenant
     from visited v join x_jobs j on j.id in (
         select id from x_jobs
         where queue = ?1 and coalesce(tenant_id, '') = v.tenant
           and state in ('ready', 'delayed', 'suspended') and run_at <= ?2
         order by run_at, id
         limit ?4)";

async fn queued(
    tx: &mut SqliteConnection,
    queue: &str,
    cursor: &str,
    slots: i64,
    now: Timestamp,
) -> Result<Vec<Candidate>, JobError> {
    let rows = sqlx::query(QUEUED)
        .bind(queue)
        .bind(ts(now))
        .bind(cursor)
        .bind(slots)
        .bind(TENANTS_PER_CLAIM as i64)
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| classify("job_claim", e))?;
    rows.iter().map(candidate).collect()
}

fn candidate(row: &sqlx::sqlite::SqliteRow) -> Result<Candidate, JobError> {
    let failed = |e| classify("job_claim", e);
    Ok(Candidate {
        id: row.try_get("id").map_err(failed)?,
        due: row.try_get("due").map_err(failed)?,
        tenant: row.try_get("tenant").map_err(failed)?,
    })
}
