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

/// The names these methods had before they moved to [`Jobs::tasks`], kept for one release so
/// code written against them still builds (with a deprecation warning naming the new path).
impl Jobs {
    /// Moved: [`Tasks::pause`], as `jobs.tasks().pause(task)`.
    #[deprecated(since = "0.1.0", note = "use `jobs.tasks().pause(task)`")]
    pub async fn pause_task(&self, task: &str) -> Result<(), JobError> {
        self.tasks().pause(task).await
    }

    /// Moved: [`Tasks::resume`], as `jobs.tasks().resume(task)`.
    #[deprecated(since = "0.1.0", note = "use `jobs.tasks().resume(task)`")]
    pub async fn resume_task(&self, task: &str) -> Result<bool, JobError> {
        self.tasks().resume(task).await
    }

    /// Moved: [`Tasks::paused`], as `jobs.tasks().paused()`.
    #[deprecated(since = "0.1.0", note = "use `jobs.tasks().paused()`")]
    pub async fn paused_tasks(&self) -> Result<Vec<String>, JobError> {
        self.tasks().paused().await
    }

    /// Moved: [`Tasks::fires`], as `jobs.tasks().fires()`.
    #[deprecated(since = "0.1.0", note = "use `jobs.tasks().fires()`")]
    pub async fn task_fires(&self) -> Result<Vec<TaskFire>, JobError> {
        self.tasks().fires().await
    }

    /// Moved: [`Tasks::leader`], as `jobs.tasks().leader()`.
    #[deprecated(since = "0.1.0", note = "use `jobs.tasks().leader()`")]
    pub async fn scheduler_leader(&self) -> Result<Option<SchedulerLeader>, JobError> {
        self.tasks().leader().await
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
