//! The core port's reads: one job by id, and the per-queue counts.

use std::collections::BTreeMap;

use super::MemoryDriver;
use crate::driver::records::*;
use crate::driver::{JobGetParams, QueueStatsParams};
use crate::error::JobError;

impl MemoryDriver {
    pub(super) async fn read_job(
        &self,
        params: &JobGetParams,
    ) -> Result<Option<JobRecord>, JobError> {
        let JobGetParams { id } = *params;
        Ok(self.lock().jobs.get(&id).map(|j| j.row()))
    }

    pub(super) async fn read_queue_stats(
        &self,
        params: &QueueStatsParams,
    ) -> Result<Vec<QueueStats>, JobError> {
        let QueueStatsParams { now } = *params;
        let state = self.lock();
        let mut by_queue: BTreeMap<&str, QueueStats> = BTreeMap::new();
        for job in state.jobs.values() {
            let r = &job.record;
            let stats = by_queue
                .entry(r.queue.as_str())
                .or_insert_with(|| QueueStats {
                    queue: r.queue.clone(),
                    ..QueueStats::default()
                });
            stats.add(r.state, r.run_at <= now, 1, Some(r.run_at), now);
        }
        Ok(by_queue.into_values().collect())
    }
}
