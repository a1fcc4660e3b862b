//! The scheduler's storage: an optional sub-port of [`JobDriver`](super::JobDriver), like the
//! lease store. A driver that has one answers [`JobDriver::scheduler_store`](super::JobDriver::scheduler_store).
//!
//! It holds one expiring leader lease row (never a session lock: acquiring IS the renewal),
//! each task's watermark (the last occurrence it handled) and last fire, and the task pauses.
//! [`SchedulerStore::task_fire`] is the fence: it moves a task's watermark from the value the
//! scheduler read to the new one AND inserts the occurrence's jobs, atomically, so a crash can
//! never fire an occurrence twice and two schedulers racing on one watermark fire it once.

use std::time::Duration;

use async_trait::async_trait;

use super::records::{EnqueueRequest, EnqueueResult};
use crate::clock::Timestamp;
use crate::error::JobError;

/// `taskFires()` answers at most this many rows.
pub const MAX_TASK_FIRES: usize = 1_000;

/// Acquire or renew the leader lease.
#[derive(Debug, Clone)]
pub struct SchedulerLeadParams {
    /// Who asks (one id per scheduler).
    pub holder: String,
    /// How long the lease holds without a renewal.
    pub ttl: Duration,
    /// Now, on the injected clock.
    pub now: Timestamp,
}

/// Give the leader lease up (a graceful stop), so a standby promotes at once.
#[derive(Debug, Clone)]
pub struct SchedulerResignParams {
    /// The holder that resigns; another holder's row is left alone.
    pub holder: String,
    /// Now.
    pub now: Timestamp,
}

/// Read who leads the fleet's schedulers.
#[derive(Debug, Clone)]
pub struct SchedulerLeaderParams {
    /// Now: a lease that expired by then leads no more.
    pub now: Timestamp,
}

/// The scheduler that holds the leader lease.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SchedulerLeader {
    /// Its id (`SchedulerHandle::id`, the holder written on the lease row).
    pub holder: String,
    /// When this holder took the lease (renewals keep it).
    pub since: Timestamp,
    /// When the lease lapses unless renewed.
    pub expires_at: Timestamp,
}

/// Read every task's watermark.
#[derive(Debug, Clone)]
pub struct TaskWatermarksParams {
    /// Now.
    pub now: Timestamp,
}

/// One task's watermark: every occurrence at or before it has been handled (fired or passed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskWatermark {
    /// The task's name.
    pub task: String,
    /// The watermark.
    pub watermark: Timestamp,
}

/// Move a task's watermark and insert the occurrence's jobs, in one atomic step.
#[derive(Debug, Clone)]
pub struct TaskFireParams {
    /// The task's name.
    pub task: String,
    /// The watermark the scheduler read; `None` when the task has none yet (arming). The fire
    /// lands only if the stored watermark still equals it.
    pub expected: Option<Timestamp>,
    /// The new watermark.
    pub watermark: Timestamp,
    /// The occurrence that dispatches, recorded as the task's last fire; `None` moves the
    /// watermark only (arming, passing missed occurrences): that is not a fire.
    pub occurrence: Option<Timestamp>,
    /// The jobs to insert, with the queue's dedupe rules (a live key answers `deduped`).
    pub jobs: Vec<EnqueueRequest>,
    /// Now.
    pub now: Timestamp,
}

/// What a fire did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFireResult {
    /// Whether the watermark moved (and so the jobs were inserted). `false`: another
    /// scheduler moved it first; nothing was inserted.
    pub fired: bool,
    /// One answer per job, in order (empty when not fired).
    pub jobs: Vec<EnqueueResult>,
}

/// Pause a task.
#[derive(Debug, Clone)]
pub struct TaskPauseParams {
    /// The task's name.
    pub task: String,
    /// Now.
    pub now: Timestamp,
}

/// Resume a task.
#[derive(Debug, Clone)]
pub struct TaskResumeParams {
    /// The task's name.
    pub task: String,
    /// Now.
    pub now: Timestamp,
}

/// Read the pauses.
#[derive(Debug, Clone)]
pub struct TaskPausedParams {
    /// Only this task (what the scheduler asks when a task is due); `None`: all of them.
    pub task: Option<String>,
    /// Now.
    pub now: Timestamp,
}

/// Read each task's last fire.
#[derive(Debug, Clone)]
pub struct TaskFiresParams {
    /// Now.
    pub now: Timestamp,
}

/// A task's last fire: the last occurrence that dispatched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFire {
    /// The task's name.
    pub task: String,
    /// The occurrence.
    pub occurrence: Timestamp,
    /// When it was fired.
    pub fired_at: Timestamp,
}

/// The scheduler's storage port.
#[async_trait]
pub trait SchedulerStore: Send + Sync {
    /// Acquires the leader lease, or renews it for its holder (the same call): `true` when
    /// `holder` leads until `now + ttl`. Another holder's unexpired lease answers `false`.
    async fn scheduler_lead(&self, params: &SchedulerLeadParams) -> Result<bool, JobError>;

    /// Deletes the lease row if `holder` still holds it.
    async fn scheduler_resign(&self, params: &SchedulerResignParams) -> Result<(), JobError>;

    /// The scheduler that leads now, if any: `None` when no lease is held or it expired.
    async fn scheduler_leader(
        &self,
        params: &SchedulerLeaderParams,
    ) -> Result<Option<SchedulerLeader>, JobError>;

    /// Every task's watermark.
    async fn task_watermarks(
        &self,
        params: &TaskWatermarksParams,
    ) -> Result<Vec<TaskWatermark>, JobError>;

    /// Moves the watermark from `expected` to `watermark` and inserts the jobs, atomically.
    async fn task_fire(&self, params: &TaskFireParams) -> Result<TaskFireResult, JobError>;

    /// Pauses a task (idempotent).
    async fn task_pause(&self, params: &TaskPauseParams) -> Result<(), JobError>;

    /// Resumes a task: `true` when it was paused.
    async fn task_resume(&self, params: &TaskResumeParams) -> Result<bool, JobError>;

    /// The paused tasks (sorted), or whether one is paused.
    async fn task_paused(&self, params: &TaskPausedParams) -> Result<Vec<String>, JobError>;

    /// Each task's last fire, sorted by task, at most [`MAX_TASK_FIRES`].
    async fn task_fires(&self, params: &TaskFiresParams) -> Result<Vec<TaskFire>, JobError>;
}
