//! The core port's reads: one job by id, the per-queue counts, and each queue's next due time.

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

    /// Each queue's earliest queued row after `now`: every tenant's and class's first row
    /// past it, read from the claim index (one seek each, never a walk of a backlog).
    pub(super) async fn read_next_due(
        &self,
        params: &NextDueParams,
    ) -> Result<Vec<QueueDue>, JobError> {
        let state = self.lock();
        let after = (
            params.now + chrono::Duration::nanoseconds(1),
            0,
            JobId::nil(),
        );
        let mut dues = Vec::new();
        for queue in &params.queues {
            let Some(tenants) = state.queued.get(queue) else {
                continue;
            };
            let earliest = tenants
                .values()
                .flat_map(|classes| classes.values())
                .filter_map(|rows| rows.range(after..).next().map(|(at, _, _)| *at))
                .min();
            if let Some(at) = earliest {
                if !dues.iter().any(|d: &QueueDue| d.queue == *queue) {
                    dues.push(QueueDue {
                        queue: queue.clone(),
                        at,
                    });
                }
            }
        }
        Ok(dues)
    }
}
