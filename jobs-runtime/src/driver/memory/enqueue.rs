//! The enqueue: a row goes in under the live-key rule (a job holding the key, live or inside its
//! unique period, answers deduped), one at a time or a batch under one lock.

use super::live_keys::LiveKey;
use std::sync::Arc;

use super::state::{MemoryState, StoredJob};
use super::MemoryDriver;
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::error::JobError;

impl MemoryState {
    /// Inserts `request` as of `now` (its own `now`, or its batch's).
    pub(super) fn enqueue(
        &mut self,
        request: &EnqueueRequest,
        now: Timestamp,
    ) -> Result<EnqueueResult, JobError> {
        self.enqueue_logged(request, now, &mut Vec::new())
    }

    /// Inserts a batch as of `now`: all of them or none, as Postgres' one transaction (a
    /// refusal takes back the batch's inserts and its debounced holders' replacements).
    pub(super) fn enqueue_all(
        &mut self,
        requests: &[EnqueueRequest],
        now: Timestamp,
    ) -> Result<Vec<EnqueueResult>, JobError> {
        let mut out = Vec::with_capacity(requests.len());
        let mut replaced = Vec::new();
        for request in requests {
            match self.enqueue_logged(request, now, &mut replaced) {
                Ok(result) => out.push(result),
                Err(error) => {
                    for inserted in out.iter().filter(|r| !r.deduped) {
                        self.remove(inserted.id);
                    }
                    for before in replaced.into_iter().rev() {
                        self.restore(before);
                    }
                    return Err(error);
                }
            }
        }
        Ok(out)
    }

    /// [`MemoryState::enqueue`], noting each debounced holder as it was before its replacement.
    fn enqueue_logged(
        &mut self,
        request: &EnqueueRequest,
        now: Timestamp,
        replaced: &mut Vec<Replaced>,
    ) -> Result<EnqueueResult, JobError> {
        let key = LiveKey {
            name: &request.name,
            tenant: LiveKey::tenant_of(request.tenant_id.as_deref()),
            key: &request.idempotency_key,
        };
        // An id that already names a row (an outbox re-publish) inserts nothing and
        // answers that row, whatever the conflict policy.
        if let Some(existing) = self.jobs.get(&request.id) {
            let r = &existing.record;
            return EnqueueResult::held(request, r.id, r.run_id, true);
        }
        let live_hash = key.hash();
        // A finished holder whose unique period lapsed answers none: the insert below files
        // the new job in its place.
        let holder = self.key_holder(live_hash, key, now, None);
        if let Some(existing) = holder.and_then(|id| self.jobs.get(&id)) {
            let (id, run_id, state) = (
                existing.record.id,
                existing.record.run_id,
                existing.record.state,
            );
            if EnqueueResult::replaces(request, false, state) {
                replaced.extend(self.replace_queued(id, request, now));
            }
            return EnqueueResult::held(request, id, run_id, false);
        }
        // A dependent starts blocked while a dependency is live, and cancelled when its
        // policy says so of one that failed (both checked before anything is written).
        let start = match &request.dependencies {
            Some(dependencies) => {
                check_dependencies(request.id, dependencies, request.run_at, now)?;
                let tenant = request.tenant_id.as_deref();
                self.dependent_start(dependencies, tenant, request.run_at)?
            }
            None => Verdict::Release.start(request.run_at),
        };
        let (state, run_at) = match start.state {
            JobState::Ready if request.run_at > now => (JobState::Delayed, request.run_at),
            state => (state, start.run_at),
        };
        let record = JobRecord {
            id: request.id,
            run_id: request.run_id,
            name: request.name.clone(),
            queue: request.queue.clone(),
            // Kept beside the row, shared with its claims.
            input: serde_json::Value::Null,
            idempotency_key: request.idempotency_key.clone(),
            tenant_id: request.tenant_id.clone(),
            state,
            attempt: 0,
            max_attempts: request.max_attempts,
            run_at,
            priority: request.priority,
            created_at: now,
            updated_at: now,
            last_error: start.last_error(),
            last_error_code: start.last_error_code().map(String::from),
            claimed_by: None,
            claims: 0,
            visible_at: None,
            progress: None,
            // Kept beside the row, shared with its claims.
            traceparent: None,
            actor: request.actor.clone(),
            unique_until: request.unique_until(now),
            result: None,
        };
        self.seq += 1;
        let job = StoredJob {
            record,
            seq: self.seq,
            input: Arc::new(request.input.clone()),
            name: self.names.get(&request.name),
            queue: self.names.get(&request.queue),
            traceparent: request.traceparent.as_deref().map(Arc::from),
            live_hash,
        };
        let live = job.record.state.is_live();
        self.jobs.insert(request.id, job);
        self.index(request.id);
        if let Some(dependencies) = &request.dependencies {
            self.link(request.id, dependencies);
        }
        // A dependent cancelled at birth holds no key, as any finished job.
        if live || request.unique_for.is_some() {
            let jobs = &self.jobs;
            self.live_keys.insert(live_hash, key, request.id, |id| {
                jobs.get(id).map(|j| &j.record)
            });
        }
        Ok(EnqueueResult {
            id: request.id,
            run_id: request.run_id,
            deduped: false,
        })
    }
}

/// A debounced holder as it was before its replacement.
struct Replaced {
    id: JobId,
    input: Arc<serde_json::Value>,
    run_at: Timestamp,
    state: JobState,
    updated_at: Timestamp,
}

impl MemoryState {
    /// Debounce: the queued holder `id` takes `request`'s input and run time; answers it as it
    /// was.
    fn replace_queued(
        &mut self,
        id: JobId,
        request: &EnqueueRequest,
        now: Timestamp,
    ) -> Option<Replaced> {
        let job = self.jobs.get_mut(&id)?;
        let input = std::mem::replace(&mut job.input, Arc::new(request.input.clone()));
        let r = &job.record;
        let before = Replaced {
            id,
            input,
            run_at: r.run_at,
            state: r.state,
            updated_at: r.updated_at,
        };
        self.update(id, |r| {
            r.run_at = request.run_at;
            r.state = if request.run_at <= now {
                JobState::Ready
            } else {
                JobState::Delayed
            };
            r.updated_at = now;
        });
        Some(before)
    }

    /// Takes a replacement back.
    fn restore(&mut self, before: Replaced) {
        if let Some(job) = self.jobs.get_mut(&before.id) {
            job.input = before.input;
        }
        self.update(before.id, |r| {
            r.run_at = before.run_at;
            r.state = before.state;
            r.updated_at = before.updated_at;
        });
    }
}

impl MemoryDriver {
    pub(super) async fn enqueue_one(
        &self,
        request: &EnqueueRequest,
    ) -> Result<EnqueueResult, JobError> {
        let result = self.lock().enqueue(request, request.now);
        if let Ok(kept) = &result {
            if planted!(EnqueueLost) && !kept.deduped && kept.id.as_u128() % 8 == 0 {
                self.lock().remove(kept.id);
                return result;
            }
        }
        if result.is_ok() {
            self.dues
                .announce(&request.queue, request.run_at, request.now);
        }
        result
    }

    pub(super) async fn enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        check_batch_without_dependencies(requests)?;
        // One `now` for the batch, as Postgres' one statement has.
        let Some(now) = requests.iter().map(|r| r.now).max() else {
            return Ok(Vec::new());
        };
        let results = self.lock().enqueue_all(requests, now)?;
        for request in requests {
            self.dues.announce(&request.queue, request.run_at, now);
        }
        Ok(results)
    }
}
