//! The core port's reads: one job by id, the per-queue counts, and each queue's next due time.

use std::collections::BTreeMap;

use sqlx::sqlite::{SqliteConnection, SqlitePool};
use sqlx::{FromRow, Row};

use super::classify::{classify, Op};
use super::job_columns;
use super::time::ts;
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::error::JobError;

pub(crate) async fn get(reader: &SqlitePool, id: JobId) -> Result<Option<JobRecord>, JobError> {
    let mut conn = reader
        .acquire()
        .await
        .map_err(|e| classify(Op::JobGet, e))?;
    get_on(&mut conn, id).await
}

pub(super) async fn get_on(
    conn: &mut SqliteConnection,
    id: JobId,
) -> Result<Option<JobRecord>, JobError> {
    let failed = |e| classify(Op::JobGet, e);
    let row = sqlx::query(concat!(
        "select ",
        job_columns!(),
        " from x_jobs where id = ?1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await
    .map_err(failed)?;
    row.as_ref()
        .map(|r| JobRecord::from_row(r).map_err(failed))
        .transpose()
}

pub(crate) async fn queue_stats(
    reader: &SqlitePool,
    now: Timestamp,
) -> Result<Vec<QueueStats>, JobError> {
    let failed = |e| classify(Op::QueueStats, e);
    let rows = sqlx::query(
        "select queue, state,
                (state in ('ready', 'delayed') and run_at > ?1) as not_due,
                count(*) as n,
                min(run_at) as oldest_run_at
         from x_jobs
         group by 1, 2, 3",
    )
    .bind(ts(now))
    .fetch_all(reader)
    .await
    .map_err(failed)?;
    let mut by_queue: BTreeMap<String, QueueStats> = BTreeMap::new();
    for row in &rows {
        let queue: String = row.try_get("queue").map_err(failed)?;
        let state: JobState = row.try_get("state").map_err(failed)?;
        let not_due: bool = row.try_get("not_due").map_err(failed)?;
        let n = u64::try_from(row.try_get::<i64, _>("n").map_err(failed)?).unwrap_or(0);
        let oldest: Option<Timestamp> = row.try_get("oldest_run_at").map_err(failed)?;
        let stats = by_queue.entry(queue.clone()).or_insert_with(|| QueueStats {
            queue,
            ..QueueStats::default()
        });
        stats.add(state, !not_due, n, oldest, now);
    }
    Ok(by_queue.into_values().collect())
}

/// Each queue's earliest run time after `now` among its queued rows, by a skip scan over
/// `x_jobs_fair_idx` (which orders a queue's rows by tenant and priority before run time, so
/// no one seek finds it): one probe per tenant (at most [`NEXT_DUE_TENANTS`] per queue, in
/// tenant order; a queue with more answers the earliest among those, and the poll covers the
/// rest), one per priority class of each tenant, and one seek per class past `now`. A read,
/// one statement per queue, on a reader.
const NEXT_DUE: &str = "with recursive
    tenants (tenant, n) as (
        select (select coalesce(tenant_id, '') from x_jobs
                where queue = ?1 and state in ('ready', 'delayed', 'suspended')
                order by coalesce(tenant_id, '') limit 1), 1
        union all
        select (select coalesce(tenant_id, '') from x_jobs
                where queue = ?1 and state in ('ready', 'delayed', 'suspended')
                  and coalesce(tenant_id, '') > t.tenant
                order by coalesce(tenant_id, '') limit 1), t.n + 1
        from tenants t
        where t.tenant is not null and t.n < ?3
    ),
    classes (tenant, priority) as (
        select t.tenant,
               (select priority from x_jobs
                where queue = ?1 and coalesce(tenant_id, '') = t.tenant
                  and state in ('ready', 'delayed', 'suspended')
                order by priority desc limit 1)
        from tenants t
        where t.tenant is not null
        union all
        select c.tenant,
               (select priority from x_jobs
                where queue = ?1 and coalesce(tenant_id, '') = c.tenant
                  and state in ('ready', 'delayed', 'suspended') and priority < c.priority
                order by priority desc limit 1)
        from classes c
        where c.priority is not null
    )
    select min((select run_at from x_jobs
                where queue = ?1 and coalesce(tenant_id, '') = c.tenant
                  and priority = c.priority
                  and state in ('ready', 'delayed', 'suspended') and run_at > ?2
                order by run_at limit 1)) as at
    from classes c
    where c.priority is not null";

pub(crate) async fn next_due(
    reader: &SqlitePool,
    params: &NextDueParams,
) -> Result<Vec<QueueDue>, JobError> {
    let failed = |e| classify(Op::QueueNextDue, e);
    let mut dues: Vec<QueueDue> = Vec::new();
    for queue in &params.queues {
        if dues.iter().any(|d| d.queue == *queue) {
            continue;
        }
        let at: Option<Timestamp> = sqlx::query_scalar(NEXT_DUE)
            .bind(queue)
            .bind(ts(params.now))
            .bind(i64::from(NEXT_DUE_TENANTS))
            .fetch_one(reader)
            .await
            .map_err(failed)?;
        if let Some(at) = at {
            dues.push(QueueDue {
                queue: queue.clone(),
                at,
            });
        }
    }
    Ok(dues)
}
