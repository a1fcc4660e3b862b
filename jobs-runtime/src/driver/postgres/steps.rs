//! Steps: the completed steps a run replays, and the fenced write of one.

use super::classify::{classify, Op};
use super::{rows, PostgresDriver};
use crate::driver::records::*;
use crate::driver::{StepListParams, StepPutParams};
use crate::error::{ErrorCode, JobError};

impl PostgresDriver {
    pub(super) async fn list_steps(
        &self,
        params: &StepListParams,
    ) -> Result<Vec<StepRecord>, JobError> {
        let StepListParams { run_id } = *params;
        let rows = sqlx::query(self.sql.step_list.clone())
            .bind(run_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::StepList, e))?;
        rows.iter().map(rows::step_record).collect()
    }

    pub(super) async fn put_step(&self, params: &StepPutParams<'_>) -> Result<bool, JobError> {
        let StepPutParams { record, fence } = *params;
        let wait = record
            .wait
            .as_ref()
            .map(serde_json::to_value)
            .transpose()
            .map_err(|_| JobError::new(ErrorCode::StepRecordInvalid, "a wait did not serialize"))?;
        let query = sqlx::query(self.sql.step_put.clone())
            .bind(record.run_id)
            .bind(&record.name)
            .bind(record.status.as_str())
            .bind(&record.output)
            .bind(&record.error)
            .bind(i32::try_from(record.attempts).unwrap_or(i32::MAX))
            .bind(record.wake_at)
            .bind(wait)
            .bind(record.updated_at)
            .bind(fence.job_id)
            .bind(&fence.by.worker_id)
            .bind(fence.by.claim);
        self.execute_fenced(Op::StepPut, query).await
    }
}
