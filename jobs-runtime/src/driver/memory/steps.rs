//! Steps: the completed steps a run replays, and the fenced write of one.

use super::MemoryDriver;
use crate::driver::records::*;
use crate::driver::{StepListParams, StepPutParams};
use crate::error::JobError;

impl MemoryDriver {
    pub(super) async fn list_steps(
        &self,
        params: &StepListParams,
    ) -> Result<Vec<StepRecord>, JobError> {
        let StepListParams { run_id } = *params;
        Ok(self
            .lock()
            .steps
            .get(&run_id)
            .map(|steps| steps.values().cloned().collect())
            .unwrap_or_default())
    }

    pub(super) async fn put_step(&self, params: &StepPutParams<'_>) -> Result<bool, JobError> {
        let StepPutParams { record, fence } = *params;
        let mut state = self.lock();
        if !state.fenced(fence.job_id, &fence.by) {
            return Ok(false);
        }
        if planted!(StepForgotten) {
            return Ok(true);
        }
        state
            .steps
            .entry(record.run_id)
            .or_default()
            .insert(record.name.clone(), record.clone());
        Ok(true)
    }
}
