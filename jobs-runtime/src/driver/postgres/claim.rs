//! The claim: the known-tenant statements when the floors know where the claimable rows begin
//! (`job_claim_one.sql`, `job_claim_known.sql`), else the planned claim (`job_claim.sql`, or
//! `job_claim_from.sql` from the floors' positions), on the pinned claim connection.

use sqlx::postgres::PgConnection;
use sqlx::Row;

use super::classify::{classify, Op};
use super::{floors, rows, PostgresDriver};
use crate::clock::{add, Timestamp};
use crate::driver::records::*;
use crate::error::{ErrorCode, JobError};

impl PostgresDriver {
    pub(super) async fn claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
        let mut lease = self
            .pinned
            .claim
            .lease(&self.pool, !self.pool_sets_nodelay)
            .await
            .map_err(|e| classify(Op::JobClaim, e))?;
        let result = self.claim_on(lease.conn(), params).await;
        lease.end(&result);
        // A burial ends a job: its dependents, if any, follow it (burials are rare).
        if result.as_ref().is_ok_and(|r| !r.exhausted.is_empty()) {
            self.release_after(params.now).await;
        }
        result
    }

    async fn claim_on(
        &self,
        conn: &mut PgConnection,
        params: &ClaimParams,
    ) -> Result<ClaimResult, JobError> {
        if params.demand.is_empty() {
            return Err(JobError::new(
                ErrorCode::JobClaimQueuesEmpty,
                "a claim named no queue",
            ));
        }
        let queues: Vec<&str> = params.demand.iter().map(|d| d.queue.as_str()).collect();
        let slots: Vec<i32> = params.demand.iter().map(|d| claim_slots(d.limit)).collect();
        let visible_at = add(params.now, params.visibility_timeout);
        let failed = |e| classify(Op::JobClaim, e);
        let mut result = ClaimResult::default();
        if let Some(known) = self.floors.known(&queues, params.now) {
            // One tenant of one queue known (the common case; the worker's other queues, if
            // any, empty): the same claim on that queue, without tenant turns.
            let one = match &known.tenant[..] {
                [tenant] => queues
                    .iter()
                    .position(|q| *q == known.queue[0])
                    .map(|at| (queues[at], slots[at], tenant)),
                _ => None,
            };
            let query = match one {
                Some((queue, free, tenant)) => sqlx::query(self.sql.job_claim_one.clone())
                    .bind(queue)
                    .bind(free)
                    .bind(&params.worker_id)
                    .bind(params.now)
                    .bind(visible_at)
                    .bind(tenant)
                    .bind(known.at[0])
                    .bind(known.id[0])
                    .bind(known.rank[0]),
                None => sqlx::query(self.sql.job_claim_known.clone())
                    .bind(&queues)
                    .bind(&slots)
                    .bind(&params.worker_id)
                    .bind(params.now)
                    .bind(visible_at)
                    .bind(&known.queue)
                    .bind(&known.tenant)
                    .bind(&known.at)
                    .bind(&known.id)
                    .bind(&known.rank),
            };
            let rows = query.fetch_all(&mut *conn).await.map_err(failed)?;
            for row in &rows {
                result.jobs.push(claimed_job(row, params, visible_at)?);
            }
        }
        // Rows from the known tenants are this claim; else the planned claim looks everywhere.
        let plan = if result.jobs.is_empty() {
            Some(self.floors.plan(&queues, params.now))
        } else {
            self.floors.after_known(params.now);
            None
        };
        match plan {
            Some(floors::Plan::Full) => {
                let started = std::time::Instant::now();
                let rows = sqlx::query(self.sql.job_claim.clone())
                    .bind(&queues)
                    .bind(&slots)
                    .bind(&params.worker_id)
                    .bind(params.now)
                    .bind(visible_at)
                    .bind(&params.drop_exhausted)
                    .bind(&params.fair_after)
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(failed)?;
                let took = started.elapsed();
                let mut taken = Vec::with_capacity(rows.len());
                for row in &rows {
                    let buried: bool = row.try_get("buried").map_err(failed)?;
                    let record = rows::job_record(row)?;
                    if buried {
                        result.exhausted.push(record);
                        continue;
                    }
                    let has_steps: bool = row.try_get("has_steps").map_err(failed)?;
                    taken.push(floors::Taken {
                        queue: record.queue.clone(),
                        tenant: record.tenant_id.clone().unwrap_or_default(),
                        at: floors::Position::of(record.priority, record.run_at, record.id),
                    });
                    result.jobs.push(ClaimedJob::from_claimed_row(
                        record, has_steps, params, visible_at,
                    ));
                }
                self.floors
                    .after_full(&queues, params.now, &taken, started, took);
            }
            Some(floors::Plan::From(from)) => {
                let started = std::time::Instant::now();
                let rows = sqlx::query(self.sql.job_claim_from.clone())
                    .bind(&queues)
                    .bind(&slots)
                    .bind(&params.worker_id)
                    .bind(params.now)
                    .bind(visible_at)
                    .bind(&params.fair_after)
                    .bind(&from.queue)
                    .bind(&from.tenant)
                    .bind(&from.at)
                    .bind(&from.id)
                    .bind(&from.discovery)
                    .bind(&from.lapse)
                    .bind(&params.drop_exhausted)
                    .bind(&from.rank)
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(failed)?;
                let (mut heads, mut lapses) = (Vec::new(), Vec::new());
                for row in &rows {
                    let kind: &str = row.try_get("kind").map_err(failed)?;
                    match kind {
                        "head" => {
                            let at: Option<Timestamp> = row.try_get("run_at").map_err(failed)?;
                            let id: Option<JobId> = row.try_get("id").map_err(failed)?;
                            let priority: Option<i16> = row.try_get("priority").map_err(failed)?;
                            heads.push(floors::Head {
                                queue: row.try_get("queue").map_err(failed)?,
                                tenant: row.try_get("tenant_id").map_err(failed)?,
                                at: at.zip(id).map(|(at, id)| {
                                    floors::Position::of(priority.unwrap_or_default(), at, id)
                                }),
                            });
                        }
                        "lapse" => lapses.push(floors::Lapse {
                            queue: row.try_get("queue").map_err(failed)?,
                            at: row.try_get("visible_at").map_err(failed)?,
                        }),
                        "buried" => result.exhausted.push(rows::job_record(row)?),
                        _ => result.jobs.push(claimed_job(row, params, visible_at)?),
                    }
                }
                self.floors
                    .after_from(&queues, params.now, started, &heads, &lapses);
            }
            None => {}
        }
        // The statement's order is not the claim order once the queues are merged.
        result.jobs.sort_by_key(|j| j.id);
        Ok(result)
    }
}

/// A claimed job from a claim statement's row (the job's columns and `has_steps`).
fn claimed_job(
    row: &sqlx::postgres::PgRow,
    params: &ClaimParams,
    visible_at: Timestamp,
) -> Result<ClaimedJob, JobError> {
    let record = rows::job_record(row)?;
    let has_steps: bool = row
        .try_get("has_steps")
        .map_err(|e| classify(Op::JobClaim, e))?;
    Ok(ClaimedJob::from_claimed_row(
        record, has_steps, params, visible_at,
    ))
}

fn claim_slots(limit: u32) -> i32 {
    i32::try_from(limit).unwrap_or(i32::MAX)
}
