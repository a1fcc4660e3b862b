//! The bulk verbs: requeue, remove or promote every job of a state (narrowed by queue, name or
//! tenant), oldest first, at most [`MAX_BULK_ROWS`] a call.

use super::act;
use crate::driver::introspect::*;
use crate::driver::memory::live_keys::LiveKey;
use crate::driver::memory::{MemoryDriver, MemoryState};
use crate::driver::records::*;
use crate::error::JobError;

fn matches(record: &JobRecord, p: &JobBulkParams) -> bool {
    record.state == p.state
        && p.queue.as_ref().is_none_or(|q| *q == record.queue)
        && p.name.as_ref().is_none_or(|n| *n == record.name)
        && p.tenant_id
            .as_ref()
            .is_none_or(|t| Some(t) == record.tenant_id.as_ref())
}

/// Postgres' order for bulk moves: oldest first by `(created_at, id)`.
fn oldest_first(state: &MemoryState, mut ids: Vec<JobId>) -> Vec<JobId> {
    ids.sort_by_key(|id| {
        let r = &state.jobs[id].record;
        (r.created_at, r.id)
    });
    ids
}

/// Requeues the matching finished jobs whose keys no other job holds (live, or inside its
/// unique period).
pub(super) fn requeue_many(
    driver: &MemoryDriver,
    params: &JobBulkParams,
) -> Result<BulkResult, JobError> {
    check_bulk_state(Bulk::Requeue, params.state)?;
    let mut state = driver.lock();
    let ids: Vec<JobId> = state
        .jobs
        .values()
        .filter(|j| matches(&j.record, params))
        .map(|j| j.record.id)
        .collect();
    let mut result = BulkResult::default();
    for id in oldest_first(&state, ids) {
        if result.affected >= u64::from(MAX_BULK_ROWS) {
            // Movable unless another job (perhaps one just requeued) holds its key.
            let stored = &state.jobs[&id];
            let key = LiveKey::of(&stored.record);
            if state
                .key_holder(stored.live_hash, key, params.now, Some(id))
                .is_none()
            {
                result.remaining += 1;
            }
            continue;
        }
        if state.requeue_row(id, params.now).is_ok() {
            result.affected += 1;
            let requeued = state.jobs[&id].row();
            let done = act(
                JobVerb::Requeue,
                Some(BULK_DETAIL),
                &params.actor,
                params.now,
            );
            state.operator.record(&requeued, done);
        }
    }
    // Rows still to move whose keys collide with one another count once.
    if result.remaining > 0 {
        let mut keys: Vec<_> = state
            .jobs
            .values()
            .filter(|j| matches(&j.record, params))
            .filter(|j| {
                let key = LiveKey::of(&j.record);
                state
                    .key_holder(j.live_hash, key, params.now, Some(j.record.id))
                    .is_none()
            })
            .map(|j| LiveKey::of(&j.record))
            .collect();
        keys.sort();
        keys.dedup();
        result.remaining = keys.len() as u64;
    }
    Ok(result)
}

/// Removes the matching jobs.
pub(super) fn remove_many(
    driver: &MemoryDriver,
    params: &JobBulkParams,
) -> Result<BulkResult, JobError> {
    check_bulk_state(Bulk::Remove, params.state)?;
    let mut state = driver.lock();
    let ids: Vec<JobId> = state
        .jobs
        .values()
        .filter(|j| matches(&j.record, params))
        .map(|j| j.record.id)
        .collect();
    let total = ids.len() as u64;
    let take = total.min(u64::from(MAX_BULK_ROWS));
    for id in oldest_first(&state, ids).into_iter().take(take as usize) {
        let removed = state.jobs[&id].row();
        state.remove_with_steps(id, params.now);
        let done = act(
            JobVerb::Remove,
            Some(BULK_DETAIL),
            &params.actor,
            params.now,
        );
        state.operator.record(&removed, done);
    }
    driver.dues.released(&mut state, params.now);
    Ok(BulkResult {
        affected: take,
        remaining: total - take,
    })
}

/// Makes the matching jobs that wait for their time due now.
pub(super) fn promote_many(
    driver: &MemoryDriver,
    params: &JobBulkParams,
) -> Result<BulkResult, JobError> {
    check_bulk_state(Bulk::Promote, params.state)?;
    let mut state = driver.lock();
    let now = params.now;
    let ids: Vec<JobId> = state
        .jobs
        .values()
        .filter(|j| matches(&j.record, params) && j.record.run_at > now)
        .map(|j| j.record.id)
        .collect();
    let total = ids.len() as u64;
    let take = total.min(u64::from(MAX_BULK_ROWS));
    for id in oldest_first(&state, ids).into_iter().take(take as usize) {
        state.update(id, |r| {
            r.state = JobState::Ready;
            r.run_at = now;
            r.updated_at = now;
        });
        let promoted = state.jobs[&id].row();
        let done = act(JobVerb::Promote, Some(BULK_DETAIL), &params.actor, now);
        state.operator.record(&promoted, done);
    }
    Ok(BulkResult {
        affected: take,
        remaining: total - take,
    })
}
