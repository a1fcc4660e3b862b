//! The verbs on one job: remove, requeue (from a step too), promote, with Postgres' refusals,
//! each recorded in the job's history; and the row changes the bulk verbs share with them.

use super::act;
use crate::clock::Timestamp;
use crate::driver::introspect::*;
use crate::driver::introspect::{JobPromoteParams, JobRemoveParams};
use crate::driver::memory::live_keys::LiveKey;
use crate::driver::memory::{MemoryDriver, MemoryState};
use crate::driver::records::*;
use crate::error::JobError;

impl MemoryState {
    /// Puts a finished row back in the queue, due now, if no other job holds its key (a live
    /// one, or one inside its unique period; the row's own period is no obstacle).
    pub(super) fn requeue_row(&mut self, id: JobId, now: Timestamp) -> Result<(), Option<JobId>> {
        let stored = &self.jobs[&id];
        let key = LiveKey::of(&stored.record);
        if let Some(holder) = self.key_holder(stored.live_hash, key, now, Some(id)) {
            return Err(Some(holder));
        }
        self.update(id, |r| {
            r.state = JobState::Ready;
            r.attempt = 0;
            r.run_at = now;
            r.visible_at = None;
            r.claimed_by = None;
            r.progress = None;
            // The finished run's result goes with it: the next run keeps its own.
            r.result = None;
            r.updated_at = now;
        });
        let jobs = &self.jobs;
        let stored = &jobs[&id];
        let key = LiveKey::of(&stored.record);
        self.live_keys.insert(stored.live_hash, key, id, |id| {
            jobs.get(id).map(|j| &j.record)
        });
        Ok(())
    }

    /// Forgets `step` of a run and every step written after it.
    pub(super) fn forget_steps_from(&mut self, run_id: RunId, step: &str) {
        let Some(steps) = self.steps.get_mut(&run_id) else {
            return;
        };
        let Some(from) = steps.get(step).map(|s| s.updated_at) else {
            return;
        };
        steps.retain(|_, s| s.updated_at < from);
    }

    pub(super) fn remove_with_steps(&mut self, id: JobId, now: Timestamp) {
        if let Some(job) = self.jobs.get(&id) {
            let run_id = job.record.run_id;
            let shared_run = self
                .jobs
                .values()
                .any(|j| j.record.run_id == run_id && j.record.id != id);
            if !shared_run {
                self.steps.remove(&run_id);
            }
        }
        self.operator.started.remove(&id);
        // A live job removed is gone for its dependents as a finished one is.
        let live_since = self
            .jobs
            .get(&id)
            .filter(|j| j.record.state.is_live())
            .map(|j| j.record.updated_at);
        // Counted by its groups, at the removal, before the row goes (removing it forgets
        // what watched it).
        if live_since.is_some() && self.groups.watches(id) {
            self.settle_groups(id, now);
        }
        self.remove(id);
        if let Some(at) = live_since {
            if self.edges.has_dependents(id) {
                self.settle_dependents(id, at);
            }
        }
    }
}

/// Removes a job that is not running, with its run's steps.
pub(super) fn remove(
    driver: &MemoryDriver,
    params: &JobRemoveParams,
) -> Result<JobRecord, JobError> {
    let id = params.id;
    let mut state = driver.lock();
    let row = state.jobs.get(&id).map(|j| j.row());
    match &row {
        Some(r) if r.state != JobState::Running => {
            state.remove_with_steps(id, params.now);
            state
                .operator
                .record(r, act(JobVerb::Remove, None, &params.actor, params.now));
            driver.dues.released(&mut state, params.now);
            Ok(r.clone())
        }
        _ => Err(refusal(Bulk::Remove, row.as_ref(), id)),
    }
}

/// Puts a finished job back in the queue, optionally forgetting its steps from one on.
pub(super) fn requeue(
    driver: &MemoryDriver,
    params: &JobRequeueParams,
) -> Result<JobRecord, JobError> {
    let mut state = driver.lock();
    let id = params.id;
    let row = state.jobs.get(&id).map(|j| j.row());
    let row = match row {
        Some(r) if !r.state.is_live() => r,
        other => return Err(refusal(Bulk::Requeue, other.as_ref(), id)),
    };
    if let Some(step) = &params.from_step {
        let known = state
            .steps
            .get(&row.run_id)
            .is_some_and(|s| s.contains_key(step));
        if !known {
            return Err(unknown_step(id, step));
        }
    }
    state
        .requeue_row(id, params.now)
        .map_err(|holder| duplicate(&row, holder))?;
    if let Some(step) = &params.from_step {
        state.forget_steps_from(row.run_id, step);
    }
    let verb = match params.from_step {
        Some(_) => JobVerb::RequeueFromStep,
        None => JobVerb::Requeue,
    };
    let requeued = state.jobs[&id].row();
    let done = act(verb, params.from_step.as_deref(), &params.actor, params.now);
    state.operator.record(&requeued, done);
    Ok(requeued)
}

/// Makes a job that waits for its time due now.
pub(super) fn promote(
    driver: &MemoryDriver,
    params: &JobPromoteParams,
) -> Result<JobRecord, JobError> {
    let (id, now) = (params.id, params.now);
    let mut state = driver.lock();
    let row = state.jobs.get(&id).map(|j| j.row());
    match &row {
        Some(r) if matches!(r.state, JobState::Delayed | JobState::Ready) && r.run_at > now => {
            state.update(id, |r| {
                r.state = JobState::Ready;
                r.run_at = now;
                r.updated_at = now;
            });
            let promoted = state.jobs[&id].row();
            let done = act(JobVerb::Promote, None, &params.actor, now);
            state.operator.record(&promoted, done);
            Ok(promoted)
        }
        _ => Err(refusal(Bulk::Promote, row.as_ref(), id)),
    }
}
