//! `job_purge`: finished jobs past their cutoffs, and the history of jobs no longer stored.

use super::state::MemoryState;
use super::MemoryDriver;
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::error::JobError;

impl MemoryDriver {
    pub(super) async fn purge_jobs(&self, params: &JobPurgeParams) -> Result<u64, JobError> {
        let mut state = self.lock();
        let mut doomed: Vec<(Timestamp, JobId, RunId, bool)> = state
            .jobs
            .values()
            .filter_map(|j| {
                let r = &j.record;
                let done = r.state == JobState::Done;
                let cutoff = if done {
                    params.done_before
                } else {
                    params.finished_before
                };
                (!r.state.is_live() && r.updated_at < cutoff).then_some((
                    r.updated_at,
                    r.id,
                    r.run_id,
                    done,
                ))
            })
            .collect();
        doomed.sort();
        let (mut done, mut finished) = (0u32, 0u32);
        let mut gone = 0u64;
        for (_, id, run_id, is_done) in doomed {
            let count = if is_done { &mut done } else { &mut finished };
            if *count >= params.limit {
                continue;
            }
            *count += 1;
            state.remove(id);
            if !state.jobs.values().any(|j| j.record.run_id == run_id) {
                state.steps.remove(&run_id);
            }
            gone += 1;
        }
        let before = params.done_before.max(params.finished_before);
        let MemoryState { jobs, operator, .. } = &mut *state;
        operator.purge_history(|id| jobs.contains_key(id), before, params.limit);
        Ok(gone)
    }
}
