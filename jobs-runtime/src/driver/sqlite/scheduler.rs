//! The SQLite [`SchedulerStore`]: the Postgres statements (`scheduler_*`, `task_*`) in
//! SQLite's terms. `task_fire` moves the watermark and inserts the jobs in one
//! `BEGIN IMMEDIATE` transaction: they commit together, and of two schedulers firing from one
//! watermark the second (waiting on the write lock) finds the watermark moved and inserts
//! nothing.

use async_trait::async_trait;
use sqlx::sqlite::SqliteConnection;
use sqlx::{Connection, Row};

use super::classify::{classify, Op};
use super::time::ts;
use super::SqliteDriver;
use crate::clock::{add, Timestamp};
use crate::driver::scheduler_store::*;
use crate::driver::{EnqueueRequest, EnqueueResult};
use crate::error::{ErrorCode, JobError};

/// Acquires the leader lease row, or renews it for its holder: the same statement. Another
/// holder's row is taken over only once it expired (?2 = now). `since` is when this holder took
/// the lease: a renewal keeps it, a takeover sets it to now.
const LEAD: &str = "insert into x_scheduler_leader (name, holder, expires_at, since)
    values ('scheduler', ?1, ?3, ?2)
    on conflict (name) do update
        set holder = excluded.holder,
            expires_at = excluded.expires_at,
            since = case when x_scheduler_leader.holder = excluded.holder
                         then coalesce(x_scheduler_leader.since, excluded.since)
                         else excluded.since end
        where x_scheduler_leader.holder = excluded.holder
           or x_scheduler_leader.expires_at <= ?2
    returning holder";

/// Moves the task's watermark from ?2 (null: the task has no row yet) to ?3; ?4 is the
/// occurrence recorded as the last fire (null: arming or passing, not a fire), ?5 now. Answers
/// the row only when it moved.
const MOVE_WATERMARK: &str =
    "insert into x_scheduler_state (task, watermark, last_occurrence, fired_at)
    values (?1, ?3, ?4, case when ?4 is null then null else ?5 end)
    on conflict (task) do update
        set watermark = excluded.watermark,
            last_occurrence = coalesce(excluded.last_occurrence, x_scheduler_state.last_occurrence),
            fired_at = coalesce(excluded.fired_at, x_scheduler_state.fired_at)
        where x_scheduler_state.watermark = ?2
    returning task";

/// A fired job, as Postgres' `task_fire` inserts it: ready at the fire's now. `on conflict do
/// nothing` covers the id and the live-key index alike. ?11: its `unique_until`.
const INSERT_JOB: &str = "insert into x_jobs (
        id, run_id, name, queue, input, idempotency_key, tenant_id, state,
        max_attempts, run_at, created_at, updated_at, priority, unique_until
    )
    values (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'ready', ?8, ?9, ?9, ?9, ?10, ?11)
    on conflict do nothing
    returning id, run_id";

/// The row that holds a job the insert yielded to: its own id, else the row holding its
/// (name, tenant, key) at ?5, live or inside its unique period, which may be an earlier job of
/// the same fire.
const HOLDER: &str = "select id, run_id from (
        select id, run_id, 0 as rank from x_jobs where id = ?1
        union all
        select id, run_id, 1 as rank from x_jobs
        where name = ?2 and coalesce(tenant_id, '') = coalesce(?3, '') and idempotency_key = ?4
          and (state in ('ready', 'delayed', 'running', 'suspended') or unique_until is not null)
          and (state in ('ready', 'delayed', 'running', 'suspended') or unique_until > ?5)
    )
    order by rank
    limit 1";

#[async_trait]
impl SchedulerStore for SqliteDriver {
    async fn scheduler_lead(&self, p: &SchedulerLeadParams) -> Result<bool, JobError> {
        let rows = sqlx::query(LEAD)
            .bind(&p.holder)
            .bind(ts(p.now))
            .bind(ts(add(p.now, p.ttl)))
            .fetch_all(&mut *self.writer.acquire(Op::SchedulerLead).await?)
            .await
            .map_err(|e| classify(Op::SchedulerLead, e))?;
        Ok(!rows.is_empty())
    }

    async fn scheduler_resign(&self, p: &SchedulerResignParams) -> Result<(), JobError> {
        sqlx::query("delete from x_scheduler_leader where name = 'scheduler' and holder = ?1")
            .bind(&p.holder)
            .execute(&mut *self.writer.acquire(Op::SchedulerResign).await?)
            .await
            .map_err(|e| classify(Op::SchedulerResign, e))?;
        Ok(())
    }

    async fn scheduler_leader(
        &self,
        p: &SchedulerLeaderParams,
    ) -> Result<Option<SchedulerLeader>, JobError> {
        let d = |e| classify(Op::SchedulerLeader, e);
        let row = sqlx::query(
            "select holder, coalesce(since, expires_at) as since, expires_at
             from x_scheduler_leader
             where name = 'scheduler' and expires_at > ?1",
        )
        .bind(ts(p.now))
        .fetch_optional(&self.reader)
        .await
        .map_err(d)?;
        row.map(|row| {
            Ok(SchedulerLeader {
                holder: row.try_get("holder").map_err(d)?,
                since: row.try_get("since").map_err(d)?,
                expires_at: row.try_get("expires_at").map_err(d)?,
            })
        })
        .transpose()
    }

    async fn task_watermarks(
        &self,
        _p: &TaskWatermarksParams,
    ) -> Result<Vec<TaskWatermark>, JobError> {
        let d = |e| classify(Op::TaskWatermarks, e);
        let rows = sqlx::query("select task, watermark from x_scheduler_state")
            .fetch_all(&self.reader)
            .await
            .map_err(d)?;
        rows.iter()
            .map(|row| {
                Ok(TaskWatermark {
                    task: row.try_get("task").map_err(d)?,
                    watermark: row.try_get("watermark").map_err(d)?,
                })
            })
            .collect()
    }

    async fn task_fire(&self, p: &TaskFireParams) -> Result<TaskFireResult, JobError> {
        let failed = |e| classify(Op::TaskFire, e);
        let mut conn = self.writer.acquire(Op::TaskFire).await?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
        let moved = sqlx::query(MOVE_WATERMARK)
            .bind(&p.task)
            .bind(ts(p.expected))
            .bind(ts(p.watermark))
            .bind(ts(p.occurrence))
            .bind(ts(p.now))
            .fetch_optional(&mut *tx)
            .await
            .map_err(failed)?;
        if moved.is_none() {
            // Another scheduler moved it first; nothing was written.
            return Ok(TaskFireResult::default());
        }
        let mut jobs = Vec::with_capacity(p.jobs.len());
        for request in &p.jobs {
            jobs.push(fire_job(&mut tx, &p.task, request, p.now).await?);
        }
        tx.commit().await.map_err(failed)?;
        Ok(TaskFireResult { fired: true, jobs })
    }

    async fn task_pause(&self, p: &TaskPauseParams) -> Result<(), JobError> {
        sqlx::query(
            "insert into x_task_pauses (task, paused_at) values (?1, ?2)
             on conflict (task) do nothing",
        )
        .bind(&p.task)
        .bind(ts(p.now))
        .execute(&mut *self.writer.acquire(Op::TaskPause).await?)
        .await
        .map_err(|e| classify(Op::TaskPause, e))?;
        Ok(())
    }

    async fn task_resume(&self, p: &TaskResumeParams) -> Result<bool, JobError> {
        let rows = sqlx::query("delete from x_task_pauses where task = ?1 returning task")
            .bind(&p.task)
            .fetch_all(&mut *self.writer.acquire(Op::TaskResume).await?)
            .await
            .map_err(|e| classify(Op::TaskResume, e))?;
        Ok(!rows.is_empty())
    }

    async fn task_paused(&self, p: &TaskPausedParams) -> Result<Vec<String>, JobError> {
        sqlx::query_scalar(
            "select task from x_task_pauses where ?1 is null or task = ?1 order by task",
        )
        .bind(&p.task)
        .fetch_all(&self.reader)
        .await
        .map_err(|e| classify(Op::TaskPaused, e))
    }

    async fn task_fires(&self, _p: &TaskFiresParams) -> Result<Vec<TaskFire>, JobError> {
        let d = |e| classify(Op::TaskFires, e);
        let rows = sqlx::query(
            "select task, last_occurrence, fired_at
             from x_scheduler_state
             where last_occurrence is not null
             order by task
             limit ?1 + 0",
        )
        .bind(MAX_TASK_FIRES as i64)
        .fetch_all(&self.reader)
        .await
        .map_err(d)?;
        rows.iter()
            .map(|row| {
                Ok(TaskFire {
                    task: row.try_get("task").map_err(d)?,
                    occurrence: row.try_get("last_occurrence").map_err(d)?,
                    fired_at: row.try_get("fired_at").map_err(d)?,
                })
            })
            .collect()
    }
}

/// Inserts one job of a fire, or answers the row holding its key (`deduped`). Inside the
/// fire's transaction no other writer can commit, so a job the insert yielded to is there to
/// be found, once a lapsed unique mark of the key is cleared (it holds nothing).
async fn fire_job(
    tx: &mut SqliteConnection,
    task: &str,
    request: &EnqueueRequest,
    now: Timestamp,
) -> Result<EnqueueResult, JobError> {
    let failed = |e| classify(Op::TaskFire, e);
    super::enqueue::lapse(tx, request, now, Op::TaskFire).await?;
    let inserted = super::enqueue::bind_job(sqlx::query(INSERT_JOB), request)
        .bind(ts(now))
        .bind(request.priority)
        .bind(ts(request.unique_until(now)))
        .fetch_optional(&mut *tx)
        .await
        .map_err(failed)?;
    let (row, deduped) = match inserted {
        Some(row) => (row, false),
        None => {
            let holder = sqlx::query(HOLDER)
                .bind(request.id)
                .bind(&request.name)
                .bind(&request.tenant_id)
                .bind(&request.idempotency_key)
                .bind(ts(now))
                .fetch_optional(&mut *tx)
                .await
                .map_err(failed)?;
            let Some(row) = holder else {
                // Unreachable under the write lock; the transaction rolls back, nothing fired.
                return Err(JobError::new(
                    ErrorCode::Driver,
                    format!(
                        "task `{task}` did not fire: a job's insert yielded to a row it could \
                         not find"
                    ),
                ));
            };
            (row, true)
        }
    };
    Ok(EnqueueResult {
        id: row.try_get("id").map_err(failed)?,
        run_id: row.try_get("run_id").map_err(failed)?,
        deduped,
    })
}
