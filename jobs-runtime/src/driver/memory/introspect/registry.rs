//! Queue pauses and the worker registry: what a claim skips, and which workers announced
//! themselves lately.

use super::OperatorState;
use crate::driver::introspect::*;
use crate::driver::introspect::{
    QueuePauseParams, QueueResumeParams, WorkerForgetParams, WorkerListParams,
};
use crate::driver::memory::MemoryDriver;
use crate::error::JobError;

impl OperatorState {
    /// Whether a claim must skip `queue`.
    pub(in crate::driver::memory) fn paused(&self, queue: &str) -> bool {
        self.paused.contains_key(queue)
    }
}

/// Pauses a queue; a second pause keeps the first pause's time and actor.
pub(super) fn pause(driver: &MemoryDriver, params: &QueuePauseParams<'_>) -> Result<(), JobError> {
    let QueuePauseParams { queue, actor, now } = *params;
    driver
        .lock()
        .operator
        .paused
        .entry(queue.to_string())
        .or_insert((now, actor.map(str::to_string)));
    Ok(())
}

/// Resumes a queue: whether it was paused.
pub(super) fn resume(
    driver: &MemoryDriver,
    params: &QueueResumeParams<'_>,
) -> Result<bool, JobError> {
    let QueueResumeParams { queue, now: _ } = *params;
    Ok(driver.lock().operator.paused.remove(queue).is_some())
}

/// The paused queues.
pub(super) fn paused(driver: &MemoryDriver) -> Result<Vec<QueuePause>, JobError> {
    Ok(driver
        .lock()
        .operator
        .paused
        .iter()
        .map(|(queue, (at, by))| QueuePause {
            queue: queue.clone(),
            paused_at: *at,
            paused_by: by.clone(),
        })
        .collect())
}

/// Files a worker's announcement, dropping the expired ones.
pub(super) fn announce(driver: &MemoryDriver, a: &WorkerAnnounce) -> Result<(), JobError> {
    let row = WorkerRow::announced(a);
    let mut state = driver.lock();
    let workers = &mut state.operator.workers;
    workers.retain(|_, w| w.expires_at > a.now);
    workers.insert(a.id.clone(), row);
    Ok(())
}

/// Forgets a worker.
pub(super) fn forget(
    driver: &MemoryDriver,
    params: &WorkerForgetParams<'_>,
) -> Result<(), JobError> {
    let WorkerForgetParams { id } = *params;
    driver.lock().operator.workers.remove(id);
    Ok(())
}

/// The workers whose announcement has not expired.
pub(super) fn list(
    driver: &MemoryDriver,
    params: &WorkerListParams,
) -> Result<Vec<WorkerRow>, JobError> {
    let WorkerListParams { now } = *params;
    Ok(driver
        .lock()
        .operator
        .workers
        .values()
        .filter(|w| w.expires_at > now)
        .cloned()
        .collect())
}
