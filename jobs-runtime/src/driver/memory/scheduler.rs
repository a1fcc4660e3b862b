//! The memory driver's [`SchedulerStore`]: the lease row, watermarks, fires and pauses in one
//! mutex. A fire takes it, then the queue's: the watermark moves and the jobs are inserted
//! through the queue's own enqueue (same dedupe) under both locks, so nothing sees one without
//! the other.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;

use super::MemoryDriver;
use crate::clock::{add, Timestamp};
use crate::driver::scheduler_store::*;
use crate::error::JobError;

#[derive(Debug, Default)]
pub(super) struct SchedulerState {
    /// `(holder, expires_at)`.
    leader: Option<SchedulerLeader>,
    tasks: BTreeMap<String, TaskRow>,
    paused: BTreeSet<String>,
}

#[derive(Debug, Clone)]
struct TaskRow {
    watermark: Timestamp,
    last: Option<(Timestamp, Timestamp)>,
}

impl MemoryDriver {
    fn scheduler(&self) -> std::sync::MutexGuard<'_, SchedulerState> {
        self.scheduler.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl SchedulerStore for MemoryDriver {
    async fn scheduler_lead(&self, p: &SchedulerLeadParams) -> Result<bool, JobError> {
        let mut s = self.scheduler();
        let (free, since) = match &s.leader {
            None => (true, p.now),
            Some(l) if l.holder == p.holder => (true, l.since),
            Some(l) => (l.expires_at <= p.now, p.now),
        };
        if free {
            s.leader = Some(SchedulerLeader {
                holder: p.holder.clone(),
                since,
                expires_at: add(p.now, p.ttl),
            });
        }
        Ok(free)
    }

    async fn scheduler_resign(&self, p: &SchedulerResignParams) -> Result<(), JobError> {
        let mut s = self.scheduler();
        if s.leader.as_ref().is_some_and(|l| l.holder == p.holder) {
            s.leader = None;
        }
        Ok(())
    }

    async fn scheduler_leader(
        &self,
        p: &SchedulerLeaderParams,
    ) -> Result<Option<SchedulerLeader>, JobError> {
        Ok(self
            .scheduler()
            .leader
            .clone()
            .filter(|l| l.expires_at > p.now))
    }

    async fn task_watermarks(
        &self,
        _p: &TaskWatermarksParams,
    ) -> Result<Vec<TaskWatermark>, JobError> {
        Ok(self
            .scheduler()
            .tasks
            .iter()
            .map(|(task, row)| TaskWatermark {
                task: task.clone(),
                watermark: row.watermark,
            })
            .collect())
    }

    async fn task_fire(&self, p: &TaskFireParams) -> Result<TaskFireResult, JobError> {
        let mut s = self.scheduler();
        let current = s.tasks.get(&p.task).map(|r| r.watermark);
        if current != p.expected && !planted!(TaskFireIgnoresWatermark) {
            return Ok(TaskFireResult::default());
        }
        // All or nothing, as Postgres' one statement.
        let jobs = self.lock().enqueue_all(&p.jobs, p.now)?;
        let last = s.tasks.get(&p.task).and_then(|r| r.last);
        s.tasks.insert(
            p.task.clone(),
            TaskRow {
                watermark: p.watermark,
                last: p.occurrence.map(|o| (o, p.now)).or(last),
            },
        );
        Ok(TaskFireResult { fired: true, jobs })
    }

    async fn task_pause(&self, p: &TaskPauseParams) -> Result<(), JobError> {
        self.scheduler().paused.insert(p.task.clone());
        Ok(())
    }

    async fn task_resume(&self, p: &TaskResumeParams) -> Result<bool, JobError> {
        Ok(self.scheduler().paused.remove(&p.task))
    }

    async fn task_paused(&self, p: &TaskPausedParams) -> Result<Vec<String>, JobError> {
        let s = self.scheduler();
        Ok(match &p.task {
            Some(task) => s.paused.get(task).cloned().into_iter().collect(),
            None => s.paused.iter().cloned().collect(),
        })
    }

    async fn task_fires(&self, _p: &TaskFiresParams) -> Result<Vec<TaskFire>, JobError> {
        Ok(self
            .scheduler()
            .tasks
            .iter()
            .filter_map(|(task, row)| {
                row.last.map(|(occurrence, fired_at)| TaskFire {
                    task: task.clone(),
                    occurrence,
                    fired_at,
                })
            })
            .take(MAX_TASK_FIRES)
            .collect())
    }
}
