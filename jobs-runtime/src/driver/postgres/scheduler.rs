//! The Postgres [`SchedulerStore`]: short adapters over the `scheduler_*` and `task_*`
//! statements. `task_fire` is one statement: the watermark and the jobs commit together.

use async_trait::async_trait;
use sqlx::Row;

use super::classify::{classify, Op};
use super::PostgresDriver;
use crate::clock::add;
use crate::driver::scheduler_store::*;
use crate::driver::EnqueueResult;
use crate::error::{ErrorCode, JobError};

#[async_trait]
impl SchedulerStore for PostgresDriver {
    async fn scheduler_lead(&self, p: &SchedulerLeadParams) -> Result<bool, JobError> {
        let row = sqlx::query(self.sql.scheduler_lead.clone())
            .bind(&p.holder)
            .bind(p.now)
            .bind(add(p.now, p.ttl))
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::SchedulerLead, e))?;
        Ok(row.is_some())
    }

    async fn scheduler_resign(&self, p: &SchedulerResignParams) -> Result<(), JobError> {
        sqlx::query(self.sql.scheduler_resign.clone())
            .bind(&p.holder)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::SchedulerResign, e))?;
        Ok(())
    }

    async fn scheduler_leader(
        &self,
        p: &SchedulerLeaderParams,
    ) -> Result<Option<SchedulerLeader>, JobError> {
        let row = sqlx::query(self.sql.scheduler_leader.clone())
            .bind(p.now)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::SchedulerLeader, e))?;
        row.map(|row| {
            let d = |e| classify(Op::SchedulerLeader, e);
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
        let rows = sqlx::query(self.sql.task_watermarks.clone())
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::TaskWatermarks, e))?;
        rows.iter()
            .map(|row| {
                let d = |e| classify(Op::TaskWatermarks, e);
                Ok(TaskWatermark {
                    task: row.try_get("task").map_err(d)?,
                    watermark: row.try_get("watermark").map_err(d)?,
                })
            })
            .collect()
    }

    async fn task_fire(&self, p: &TaskFireParams) -> Result<TaskFireResult, JobError> {
        let jobs = &p.jobs;
        let ids: Vec<_> = jobs.iter().map(|j| j.id).collect();
        let run_ids: Vec<_> = jobs.iter().map(|j| j.run_id).collect();
        let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
        let queues: Vec<&str> = jobs.iter().map(|j| j.queue.as_str()).collect();
        let inputs: Vec<&serde_json::Value> = jobs.iter().map(|j| &j.input).collect();
        let keys: Vec<&str> = jobs.iter().map(|j| j.idempotency_key.as_str()).collect();
        let tenants: Vec<Option<&str>> = jobs.iter().map(|j| j.tenant_id.as_deref()).collect();
        let priorities: Vec<i16> = jobs.iter().map(|j| j.priority).collect();
        let unique_until: Vec<_> = jobs.iter().map(|j| j.unique_until(p.now)).collect();
        // A finished row whose unique period lapsed would refuse a fired job its key without
        // holding it: clear those marks first (right whenever it is done, so no transaction).
        sqlx::query(self.sql.job_unique_lapse.clone())
            .bind(&names)
            .bind(&tenants)
            .bind(&keys)
            .bind(p.now)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::TaskFire, e))?;
        let attempts: Vec<i32> = jobs
            .iter()
            .map(|j| i32::try_from(j.max_attempts).unwrap_or(i32::MAX))
            .collect();
        let rows = sqlx::query(self.sql.task_fire.clone())
            .bind(&p.task)
            .bind(p.expected)
            .bind(p.watermark)
            .bind(p.occurrence)
            .bind(p.now)
            .bind(&ids)
            .bind(&run_ids)
            .bind(&names)
            .bind(&queues)
            .bind(&inputs)
            .bind(&keys)
            .bind(&tenants)
            .bind(&attempts)
            .bind(&*self.wake_channel)
            .bind(&priorities)
            .bind(&unique_until)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::TaskFire, e))?;
        let d = |e| classify(Op::TaskFire, e);
        let mut result = TaskFireResult::default();
        for row in &rows {
            let ord: i64 = row.try_get("ord").map_err(d)?;
            if ord == 0 {
                result.fired = row.try_get("fired").map_err(d)?;
                continue;
            }
            let id: Option<uuid::Uuid> = row.try_get("id").map_err(d)?;
            let run_id: Option<uuid::Uuid> = row.try_get("run_id").map_err(d)?;
            let (Some(id), Some(run_id)) = (id, run_id) else {
                // The key's holder committed after the statement began: the fire landed, but
                // this answer cannot name that holder.
                return Err(JobError::new(
                    ErrorCode::Driver,
                    format!(
                        "task `{}` fired, and a job's key was taken by a row committed meanwhile",
                        p.task
                    ),
                ));
            };
            result.jobs.push(EnqueueResult {
                id,
                run_id,
                deduped: row.try_get("deduped").map_err(d)?,
            });
        }
        Ok(result)
    }

    async fn task_pause(&self, p: &TaskPauseParams) -> Result<(), JobError> {
        sqlx::query(self.sql.task_pause.clone())
            .bind(&p.task)
            .bind(p.now)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::TaskPause, e))?;
        Ok(())
    }

    async fn task_resume(&self, p: &TaskResumeParams) -> Result<bool, JobError> {
        let row = sqlx::query(self.sql.task_resume.clone())
            .bind(&p.task)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::TaskResume, e))?;
        Ok(row.is_some())
    }

    async fn task_paused(&self, p: &TaskPausedParams) -> Result<Vec<String>, JobError> {
        sqlx::query_scalar(self.sql.task_paused.clone())
            .bind(&p.task)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::TaskPaused, e))
    }

    async fn task_fires(&self, _p: &TaskFiresParams) -> Result<Vec<TaskFire>, JobError> {
        let rows = sqlx::query(self.sql.task_fires.clone())
            .bind(MAX_TASK_FIRES as i64)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::TaskFires, e))?;
        rows.iter()
            .map(|row| {
                let d = |e| classify(Op::TaskFires, e);
                Ok(TaskFire {
                    task: row.try_get("task").map_err(d)?,
                    occurrence: row.try_get("last_occurrence").map_err(d)?,
                    fired_at: row.try_get("fired_at").map_err(d)?,
                })
            })
            .collect()
    }
}
