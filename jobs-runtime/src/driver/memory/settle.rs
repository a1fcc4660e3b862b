//! The settling writes, each fenced on the claim: ack, nack, heartbeat, progress; and the
//! cancel, with its history row under the same lock.

use super::{introspect, MemoryDriver};
use crate::clock::add;
use crate::driver::introspect::JobVerb;
use crate::driver::records::*;
use crate::driver::JobCancelParams;
use crate::error::{ErrorCode, JobError};

impl MemoryDriver {
    pub(super) async fn ack(&self, params: &AckParams) -> Result<bool, JobError> {
        let mut state = self.lock_yielding().await;
        if !state.fenced(params.job_id, &params.by) {
            return Ok(false);
        }
        state.update(params.job_id, |r| {
            r.state = JobState::Done;
            r.visible_at = None;
            r.last_error = None;
            r.last_error_code = None;
            r.result = params.result.clone();
            r.updated_at = params.now;
        });
        self.dues.released(&mut state, params.now);
        Ok(true)
    }

    pub(super) async fn nack(&self, params: &NackParams) -> Result<bool, JobError> {
        let mut state = self.lock();
        if !state.fenced(params.job_id, &params.by) {
            return Ok(false);
        }
        let mut queue = None;
        let announcing =
            matches!(params.target, NackTarget::Retry | NackTarget::Park) && self.dues.listened();
        state.update(params.job_id, |r| {
            if announcing {
                queue = Some(r.queue.clone());
            }
            r.state = params.target.state();
            if !params.counts_as_attempt {
                r.attempt = r.attempt.saturating_sub(1);
            }
            r.run_at = params.run_at;
            r.visible_at = None;
            if params.error.is_some() {
                r.last_error = params.error.clone();
                r.last_error_code = params.error_code.clone();
            }
            r.updated_at = params.now;
        });
        self.dues.released(&mut state, params.now);
        drop(state);
        if let Some(queue) = queue {
            self.dues.announce(&queue, params.run_at, params.now);
        }
        Ok(true)
    }

    pub(super) async fn heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError> {
        let mut state = self.lock();
        if !state.fenced(params.job_id, &params.by) {
            return Ok(false);
        }
        let visible_at = add(params.now, params.visibility_timeout);
        state.update(params.job_id, |r| {
            r.visible_at = Some(visible_at);
            r.updated_at = params.now;
        });
        Ok(true)
    }

    pub(super) async fn progress(&self, params: &ProgressParams) -> Result<bool, JobError> {
        let mut state = self.lock();
        if !state.fenced(params.job_id, &params.by) {
            return Ok(false);
        }
        state.update(params.job_id, |r| {
            r.progress = Some(params.progress.clone());
            r.updated_at = params.now;
        });
        Ok(true)
    }

    pub(super) async fn cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError> {
        let (id, now) = (params.id, params.now);
        let mut state = self.lock();
        match state.jobs.get(&id) {
            Some(job) if job.record.state.is_live() => {}
            Some(job) => {
                return Err(JobError::new(
                    ErrorCode::JobNotCancellable,
                    format!("job {id} is {}, not live", job.record.state),
                ))
            }
            None => {
                return Err(JobError::new(
                    ErrorCode::JobNotCancellable,
                    format!("no job with id {id}"),
                ))
            }
        }
        state.update(id, |r| {
            r.state = JobState::Cancelled;
            r.visible_at = None;
            r.updated_at = now;
        });
        let cancelled = state.jobs[&id].row();
        let done = introspect::act(
            JobVerb::Cancel,
            params.reason.as_deref(),
            &params.actor,
            now,
        );
        state.operator.record(&cancelled, done);
        // The jobs it invoked go with it, and theirs.
        let mut children = state.groups.children_of(id);
        while let Some(child) = children.pop() {
            if !state
                .jobs
                .get(&child)
                .is_some_and(|j| j.record.state.is_live())
            {
                continue;
            }
            state.update(child, |r| {
                r.state = JobState::Cancelled;
                r.visible_at = None;
                r.updated_at = now;
            });
            let row = state.jobs[&child].row();
            let done = introspect::act(JobVerb::Cancel, None, &params.actor, now);
            state.operator.record(&row, done);
            children.extend(state.groups.children_of(child));
        }
        self.dues.released(&mut state, now);
        Ok(cancelled)
    }
}
