//! [`Tasks`]: the handle on the declared tasks' state in the store (pause, resume, the last
//! fires, the fleet's leader), and the builder of a [`Scheduler`](super::Scheduler).

use crate::client::Jobs;
use crate::driver::scheduler_store::{
    SchedulerLeader, SchedulerLeaderParams, SchedulerStore, TaskFire, TaskFiresParams,
    TaskPauseParams, TaskPausedParams, TaskResumeParams,
};
use crate::error::JobError;

use super::SchedulerBuilder;

impl Jobs {
    /// A scheduler over this client's driver and clock: fires the tasks' cron occurrences.
    pub fn scheduler(&self) -> SchedulerBuilder {
        SchedulerBuilder::new(self.clone())
    }

    /// The tasks' state in the store: pause and resume a task, its last fires, the leader.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), jobs::JobError> {
    /// let jobs = jobs::Jobs::memory();
    /// jobs.tasks().pause("nightly-digest").await?;
    /// assert_eq!(jobs.tasks().paused().await?, ["nightly-digest"]);
    /// assert!(jobs.tasks().resume("nightly-digest").await?);
    /// # Ok(()) }
    /// ```
    pub fn tasks(&self) -> Tasks<'_> {
        Tasks { jobs: self }
    }
}

/// The declared tasks' state in the store; from [`Jobs::tasks`].
#[derive(Debug, Clone, Copy)]
pub struct Tasks<'a> {
    jobs: &'a Jobs,
}

impl Tasks<'_> {
    fn scheduler_store(&self) -> Result<&dyn SchedulerStore, JobError> {
        self.jobs
            .driver_part(|d| d.scheduler_store(), "has no scheduler store")
    }

    /// Pauses a task: its occurrences are not dispatched until it is resumed, and its watermark
    /// stays where it was, so on resume its catch-up decides what it missed.
    pub async fn pause(&self, task: &str) -> Result<(), JobError> {
        let params = TaskPauseParams {
            task: task.to_string(),
            now: self.jobs.now(),
        };
        self.scheduler_store()?.task_pause(&params).await
    }

    /// Resumes a task (seen by the leader within 5 s): `true` when it was paused.
    pub async fn resume(&self, task: &str) -> Result<bool, JobError> {
        let params = TaskResumeParams {
            task: task.to_string(),
            now: self.jobs.now(),
        };
        self.scheduler_store()?.task_resume(&params).await
    }

    /// The paused tasks, sorted.
    pub async fn paused(&self) -> Result<Vec<String>, JobError> {
        let params = TaskPausedParams {
            task: None,
            now: self.jobs.now(),
        };
        self.scheduler_store()?.task_paused(&params).await
    }

    /// Each task's last fire: the last occurrence that dispatched (arming a task, or passing
    /// missed occurrences, is not a fire).
    pub async fn fires(&self) -> Result<Vec<TaskFire>, JobError> {
        let params = TaskFiresParams {
            now: self.jobs.now(),
        };
        self.scheduler_store()?.task_fires(&params).await
    }

    /// The scheduler that leads the fleet now (its id, since when, and when its lease lapses
    /// unless renewed), or `None` when no scheduler holds the lease.
    pub async fn leader(&self) -> Result<Option<SchedulerLeader>, JobError> {
        let params = SchedulerLeaderParams {
            now: self.jobs.now(),
        };
        self.scheduler_store()?.scheduler_leader(&params).await
    }
}
