//! The claim: lapsed runs first (buried when out of attempts), then due rows per queue, tenant
//! by tenant in turn, fenced with the claim's ordinal.

use rustc_hash::FxHashMap as HashMap;

use super::MemoryDriver;
use crate::clock::{add, Timestamp};
use crate::driver::records::*;
use crate::error::{ErrorCode, JobError};

impl MemoryDriver {
    pub(super) async fn claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
        if params.demand.is_empty() {
            return Err(JobError::new(
                ErrorCode::JobClaimQueuesEmpty,
                "a claim named no queue",
            ));
        }
        // Each demanded queue once, with its last limit (a worker names each once; a map of
        // them was built per claim before).
        let slots: Vec<(&str, u32)> = params
            .demand
            .iter()
            .enumerate()
            .filter(|(i, d)| !params.demand[i + 1..].iter().any(|e| e.queue == d.queue))
            .map(|(_, d)| (d.queue.as_str(), d.limit))
            .collect();
        let slot_of = |queue: &str| slots.iter().position(|(q, _)| *q == queue);
        let wanted: usize = slots.iter().map(|(_, limit)| *limit as usize).sum();
        let mut state = self.lock_yielding().await;
        // Lapsed running rows, then each demanded queue's tenants' heads (at most a queue's
        // slots per tenant, highest priority class first): never a walk through one tenant's
        // backlog. `(class, due, insertion, id)`, the class the priority negated.
        let mut due: Vec<(i16, Timestamp, u64, JobId)> = Vec::with_capacity(wanted);
        due.extend(
            state
                .running
                .iter()
                .take_while(|(at, _, _)| *at <= params.now)
                .map(|&(at, seq, id)| (-state.jobs[&id].record.priority, at, seq, id)),
        );
        for (queue, limit) in &slots {
            let Some(tenants) = state.queued.get(*queue) else {
                continue;
            };
            for classes in tenants.values() {
                due.extend(
                    classes
                        .iter()
                        .flat_map(|(class, rows)| {
                            rows.iter()
                                .take_while(|(at, _, _)| *at <= params.now)
                                .map(|&(at, seq, id)| (*class, at, seq, id))
                        })
                        .take(*limit as usize),
                );
            }
        }
        due.sort_unstable();
        let mut result = ClaimResult {
            jobs: Vec::with_capacity(due.len().min(wanted)),
            exhausted: Vec::new(),
        };
        // Each tenant's due rows, highest priority first, then in due order, make its turns (at
        // most a queue's slots of them); the queue then takes turn 1 of every tenant, turn 2,
        // ... as Postgres does (within a turn, the higher priority, then the earlier due).
        // The choice only reads the rows (names are borrowed, never copied); the writes follow.
        let mut exhausted: Vec<JobId> = Vec::new();
        let mut chosen: Vec<JobId> = Vec::with_capacity(result.jobs.capacity());
        {
            let mut turns: HashMap<(usize, &str), u32> = HashMap::default();
            // `(queue, turn, due order, id)`.
            let mut candidates: Vec<(&str, u32, usize, JobId)> = Vec::with_capacity(due.len());
            for (order, (_, _, _, id)) in due.into_iter().enumerate() {
                let stored = &state.jobs[&id];
                let job = &stored.record;
                let Some(slot) = slot_of(&stored.queue) else {
                    continue;
                };
                let (queue, limit) = slots[slot];
                if state.operator.paused(queue) {
                    continue;
                }
                if job.state == JobState::Running && job.attempt >= job.max_attempts {
                    exhausted.push(id);
                    continue;
                }
                let tenant = job.tenant_id.as_deref().unwrap_or("");
                let turn = turns.entry((slot, tenant)).or_insert(0);
                if *turn < limit {
                    *turn += 1;
                    candidates.push((queue, *turn, order, id));
                }
            }
            candidates.sort_unstable();
            let mut taken = vec![0u32; slots.len()];
            for (queue, _turn, _order, id) in candidates {
                let slot = slot_of(queue).expect("a candidate's queue is demanded");
                if taken[slot] < slots[slot].1 {
                    taken[slot] += 1;
                    chosen.push(id);
                }
            }
        }
        for id in exhausted {
            // Every worker that took this row died on its final attempt: bury it rather than
            // hand it out forever.
            let job = &state.jobs[&id].record;
            let target = if params.drop_exhausted.contains(&job.name) {
                JobState::Failed
            } else {
                JobState::Dead
            };
            state.update(id, |r| {
                r.state = target;
                r.visible_at = None;
                r.last_error = Some(LEASE_LAPSED_FINAL_ATTEMPT.to_string());
                r.last_error_code = None;
                r.updated_at = params.now;
            });
            result.exhausted.push(state.jobs[&id].row());
        }
        self.dues.released(&mut state, params.now);
        for id in chosen {
            let visible_at = add(params.now, params.visibility_timeout);
            state.update(id, |r| {
                r.state = JobState::Running;
                r.attempt += 1;
                r.claims += 1;
                r.claimed_by = Some(String::from(&*params.worker_id));
                r.visible_at = Some(visible_at);
                r.updated_at = params.now;
            });
            let stored = &state.jobs[&id];
            let r = &stored.record;
            result.jobs.push(ClaimedJob {
                id,
                run_id: r.run_id,
                name: stored.name.clone(),
                queue: stored.queue.clone(),
                input: stored.input.clone(),
                attempt: r.attempt,
                max_attempts: r.max_attempts,
                tenant_id: r.tenant_id.clone(),
                by: ClaimIdentity {
                    worker_id: params.worker_id.clone(),
                    claim: r.claims,
                },
                visible_at,
                traceparent: stored.traceparent.clone(),
                actor: r.actor.clone(),
                has_steps: state.steps.get(&r.run_id).is_some_and(|s| !s.is_empty()),
                created_at: r.created_at,
            });
        }
        Ok(result)
    }
}
