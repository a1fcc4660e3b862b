//! The memory driver's [`JobIntrospection`]: the same answers as Postgres' statements, over the
//! queue's own maps. The counters move inside [`MemoryState::update`], the one place a row
//! changes state, as Postgres moves them in the statement that settles the row.

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap as HashMap;

use async_trait::async_trait;

use super::live_keys::LiveKey;
use super::{MemoryDriver, MemoryState};
use crate::clock::{add, Timestamp};
use crate::driver::introspect::*;
use crate::driver::introspect::{
    CounterTotalsParams, CountersParams, CountersRollupParams, JobPromoteParams, JobRemoveParams,
    QueuePauseParams, QueueResumeParams, WorkerForgetParams, WorkerListParams,
};
use crate::driver::records::*;
use crate::error::JobError;

/// What the operator surface keeps beside the queue.
#[derive(Debug, Default)]
pub(super) struct OperatorState {
    /// Paused queues: since when, and by whom.
    paused: BTreeMap<String, (Timestamp, Option<String>)>,
    /// Each job's history, oldest first, at most [`MAX_HISTORY_PAGE`] rows per job (the oldest
    /// go first). Kept apart from the job, so a removed job's rows stay until the purge.
    history: HashMap<JobId, VecDeque<HistoryRow>>,
    /// The insertion order of history rows (ties on `at` read newest first by it).
    history_seq: u64,
    workers: BTreeMap<String, WorkerRow>,
    /// `name` -> `(width, bucket)` -> counts. Nested so that a settle finds its name's buckets
    /// by the borrowed name, with no copy of it per settle.
    counters: BTreeMap<String, BTreeMap<(u32, Timestamp), CounterBucket>>,
    /// When each running job's current attempt started (its claim), for the durations.
    started: HashMap<JobId, Timestamp>,
}

/// One stored history row: the entry, the tenant its job had, and its insertion order.
#[derive(Debug, Clone)]
struct HistoryRow {
    seq: u64,
    tenant_id: Option<String>,
    entry: JobHistoryEntry,
}

/// One act to record in a job's history.
#[derive(Debug, Clone, Copy)]
pub(super) struct Act<'a> {
    pub verb: JobVerb,
    pub detail: Option<&'a str>,
    pub actor: Option<&'a str>,
    pub at: Timestamp,
}

/// A row's state before a change, for the counters.
#[derive(Debug, Clone, Copy)]
pub(super) struct Before {
    state: JobState,
    attempt: u32,
    claims: i64,
}

impl Before {
    pub(super) fn of(record: &JobRecord) -> Before {
        Before {
            state: record.state,
            attempt: record.attempt,
            claims: record.claims,
        }
    }
}

impl OperatorState {
    /// Appends `act` to the history of `record`'s job (in the same lock as the act itself).
    pub(super) fn record(&mut self, record: &JobRecord, act: Act<'_>) {
        self.history_seq += 1;
        let rows = self.history.entry(record.id).or_default();
        if rows.len() >= MAX_HISTORY_PAGE as usize {
            rows.pop_front();
        }
        rows.push_back(HistoryRow {
            seq: self.history_seq,
            tenant_id: record.tenant_id.clone(),
            entry: JobHistoryEntry {
                job_id: record.id,
                at: act.at,
                actor: act.actor.map(str::to_string),
                verb: act.verb.as_str().to_string(),
                detail: act.detail.map(str::to_string),
            },
        });
    }

    /// The purge's share: up to `limit` history rows of jobs `stored` no longer answers for,
    /// written before `before`, oldest first.
    pub(super) fn purge_history(
        &mut self,
        stored: impl Fn(&JobId) -> bool,
        before: Timestamp,
        limit: u32,
    ) {
        let mut doomed: Vec<(Timestamp, u64, JobId)> = self
            .history
            .iter()
            .filter(|(id, _)| !stored(id))
            .flat_map(|(id, rows)| {
                rows.iter()
                    .filter(|r| r.entry.at < before)
                    .map(|r| (r.entry.at, r.seq, *id))
            })
            .collect();
        doomed.sort();
        doomed.truncate(limit as usize);
        for (_, seq, id) in doomed {
            if let Some(rows) = self.history.get_mut(&id) {
                rows.retain(|r| r.seq != seq);
                if rows.is_empty() {
                    self.history.remove(&id);
                }
            }
        }
    }

    /// Whether a claim must skip `queue`.
    pub(super) fn paused(&self, queue: &str) -> bool {
        self.paused.contains_key(queue)
    }

    /// Counts a change of `record` from `before`: a claim starts the attempt's clock; a settle
    /// adds to the 1-minute bucket of its job name.
    pub(super) fn observe(&mut self, before: Before, record: &JobRecord) {
        if record.claims != before.claims && record.state == JobState::Running {
            self.started.insert(record.id, record.updated_at);
            return;
        }
        let Some(outcome) =
            CounterOutcome::of(before.state, before.attempt, record.state, record.attempt)
        else {
            if record.state != JobState::Running {
                self.started.remove(&record.id);
            }
            return;
        };
        let now = record.updated_at;
        let started = self.started.remove(&record.id).unwrap_or(now);
        let elapsed = (now - started).num_milliseconds().max(0) as u64;
        let bucket = bucket_start(now, 60);
        if !self.counters.contains_key(record.name.as_str()) {
            self.counters.insert(record.name.clone(), BTreeMap::new());
        }
        let counts = self
            .counters
            .get_mut(record.name.as_str())
            .expect("filed just above")
            .entry((60, bucket))
            .or_insert_with(|| CounterBucket {
                bucket: Some(bucket),
                width_secs: 60,
                ..CounterBucket::default()
            });
        match outcome {
            CounterOutcome::Done => counts.done += 1,
            CounterOutcome::Retried => counts.retried += 1,
            CounterOutcome::Failed => counts.failed += 1,
            CounterOutcome::Dead => counts.dead += 1,
        }
        counts.duration_ms += elapsed;
    }
}

/// An act at `at` by `actor`.
pub(super) fn act<'a>(
    verb: JobVerb,
    detail: Option<&'a str>,
    actor: &'a Option<String>,
    at: Timestamp,
) -> Act<'a> {
    Act {
        verb,
        detail,
        actor: actor.as_deref(),
        at,
    }
}

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

impl MemoryState {
    /// Puts a finished row back in the queue, due now, if no live row holds its key.
    fn requeue_row(&mut self, id: JobId, now: Timestamp) -> Result<(), Option<JobId>> {
        let key = LiveKey::of(&self.jobs[&id].record);
        if let Some(holder) = self.live_keys.holder(key, |id| self.record(id)) {
            return Err(Some(holder));
        }
        self.update(id, |r| {
            r.state = JobState::Ready;
            r.attempt = 0;
            r.run_at = now;
            r.visible_at = None;
            r.claimed_by = None;
            r.progress = None;
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
    fn forget_steps_from(&mut self, run_id: RunId, step: &str) {
        let Some(steps) = self.steps.get_mut(&run_id) else {
            return;
        };
        let Some(from) = steps.get(step).map(|s| s.updated_at) else {
            return;
        };
        steps.retain(|_, s| s.updated_at < from);
    }

    fn remove_with_steps(&mut self, id: JobId) {
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
        self.remove(id);
    }
}

#[async_trait]
impl JobIntrospection for MemoryDriver {
    async fn job_list(&self, params: &JobListParams) -> Result<JobPage, JobError> {
        let (limit, cursor) = check_list(params)?;
        let state = self.lock();
        let mut rows: Vec<&JobRecord> = state
            .jobs
            .values()
            .map(|j| &j.record)
            .filter(|r| params.queue.as_ref().is_none_or(|q| *q == r.queue))
            .filter(|r| params.name.as_ref().is_none_or(|n| *n == r.name))
            .filter(|r| params.state.is_none_or(|s| s == r.state))
            .filter(|r| {
                params
                    .tenant_id
                    .as_ref()
                    .is_none_or(|t| Some(t) == r.tenant_id.as_ref())
            })
            .filter(|r| {
                params
                    .id_prefix
                    .as_ref()
                    .is_none_or(|p| r.id.to_string().starts_with(p.as_str()))
            })
            .filter(|r| params.created_from.is_none_or(|f| r.created_at >= f))
            .filter(|r| params.created_to.is_none_or(|t| r.created_at < t))
            .collect();
        let key = |r: &JobRecord| (r.created_at.timestamp_micros(), r.id);
        rows.sort_by_key(|r| std::cmp::Reverse(key(r)));
        let page: Vec<JobSummary> = match cursor {
            None => rows
                .iter()
                .take(limit as usize)
                .map(|r| (*r).into())
                .collect(),
            Some(Cursor::After(c)) => rows
                .iter()
                .filter(|r| key(r) < (c.created_micros, c.id))
                .take(limit as usize)
                .map(|r| (*r).into())
                .collect(),
            Some(Cursor::Before(c)) => {
                let mut newer: Vec<JobSummary> = rows
                    .iter()
                    .rev()
                    .filter(|r| key(r) > (c.created_micros, c.id))
                    .take(limit as usize)
                    .map(|r| (*r).into())
                    .collect();
                newer.reverse();
                newer
            }
        };
        Ok(page_of(page, limit, cursor))
    }

    async fn job_remove(&self, params: &JobRemoveParams) -> Result<JobRecord, JobError> {
        let id = params.id;
        let mut state = self.lock();
        let row = state.jobs.get(&id).map(|j| j.row());
        match &row {
            Some(r) if r.state != JobState::Running => {
                state.remove_with_steps(id);
                state
                    .operator
                    .record(r, act(JobVerb::Remove, None, &params.actor, params.now));
                Ok(r.clone())
            }
            _ => Err(refusal(Bulk::Remove, row.as_ref(), id)),
        }
    }

    async fn job_requeue(&self, params: &JobRequeueParams) -> Result<JobRecord, JobError> {
        let mut state = self.lock();
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

    async fn job_promote(&self, params: &JobPromoteParams) -> Result<JobRecord, JobError> {
        let (id, now) = (params.id, params.now);
        let mut state = self.lock();
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

    async fn job_requeue_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        check_bulk_state(Bulk::Requeue, params.state)?;
        let mut state = self.lock();
        let ids: Vec<JobId> = state
            .jobs
            .values()
            .filter(|j| matches(&j.record, params))
            .map(|j| j.record.id)
            .collect();
        let mut result = BulkResult::default();
        for id in oldest_first(&state, ids) {
            if result.affected >= u64::from(MAX_BULK_ROWS) {
                // Movable unless a live row (perhaps one just requeued) holds its key.
                let key = LiveKey::of(&state.jobs[&id].record);
                if state.live_keys.holder(key, |id| state.record(id)).is_none() {
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
                .map(|j| LiveKey::of(&j.record))
                .filter(|key| {
                    state
                        .live_keys
                        .holder(*key, |id| state.record(id))
                        .is_none()
                })
                .collect();
            keys.sort();
            keys.dedup();
            result.remaining = keys.len() as u64;
        }
        Ok(result)
    }

    async fn job_remove_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        check_bulk_state(Bulk::Remove, params.state)?;
        let mut state = self.lock();
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
            state.remove_with_steps(id);
            let done = act(
                JobVerb::Remove,
                Some(BULK_DETAIL),
                &params.actor,
                params.now,
            );
            state.operator.record(&removed, done);
        }
        Ok(BulkResult {
            affected: take,
            remaining: total - take,
        })
    }

    async fn job_promote_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        check_bulk_state(Bulk::Promote, params.state)?;
        let mut state = self.lock();
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

    async fn job_history(
        &self,
        params: &JobHistoryParams,
    ) -> Result<Vec<JobHistoryEntry>, JobError> {
        let limit = check_history(params)?;
        let state = self.lock();
        let Some(rows) = state.operator.history.get(&params.id) else {
            return Ok(Vec::new());
        };
        let mut rows: Vec<&HistoryRow> = rows
            .iter()
            .filter(|r| {
                params
                    .tenant_id
                    .as_ref()
                    .is_none_or(|t| r.tenant_id.as_ref() == Some(t))
            })
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse((r.entry.at, r.seq)));
        Ok(rows
            .into_iter()
            .take(limit as usize)
            .map(|r| r.entry.clone())
            .collect())
    }

    async fn queue_pause(&self, params: &QueuePauseParams<'_>) -> Result<(), JobError> {
        let QueuePauseParams { queue, actor, now } = *params;
        self.lock()
            .operator
            .paused
            .entry(queue.to_string())
            .or_insert((now, actor.map(str::to_string)));
        Ok(())
    }

    async fn queue_resume(&self, params: &QueueResumeParams<'_>) -> Result<bool, JobError> {
        let QueueResumeParams { queue, now: _ } = *params;
        Ok(self.lock().operator.paused.remove(queue).is_some())
    }

    async fn queue_paused(&self) -> Result<Vec<QueuePause>, JobError> {
        Ok(self
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

    async fn worker_announce(&self, a: &WorkerAnnounce) -> Result<(), JobError> {
        let row = WorkerRow {
            id: a.id.clone(),
            host: a.host.clone(),
            started_at: a.started_at,
            queues: a.queues.clone(),
            slots: a.slots,
            in_flight: a
                .in_flight
                .iter()
                .take(MAX_WORKER_IN_FLIGHT)
                .copied()
                .collect(),
            in_flight_count: a.in_flight_count,
            heartbeat_at: a.now,
            expires_at: add(a.now, a.ttl),
        };
        let mut state = self.lock();
        let workers = &mut state.operator.workers;
        workers.retain(|_, w| w.expires_at > a.now);
        workers.insert(a.id.clone(), row);
        Ok(())
    }

    async fn worker_forget(&self, params: &WorkerForgetParams<'_>) -> Result<(), JobError> {
        let WorkerForgetParams { id } = *params;
        self.lock().operator.workers.remove(id);
        Ok(())
    }

    async fn worker_list(&self, params: &WorkerListParams) -> Result<Vec<WorkerRow>, JobError> {
        let WorkerListParams { now } = *params;
        Ok(self
            .lock()
            .operator
            .workers
            .values()
            .filter(|w| w.expires_at > now)
            .cloned()
            .collect())
    }

    async fn counters(&self, params: &CountersParams<'_>) -> Result<Vec<CounterBucket>, JobError> {
        let CountersParams { name, since } = *params;
        let state = self.lock();
        let mut rows: Vec<CounterBucket> = state
            .operator
            .counters
            .get(name)
            .into_iter()
            .flatten()
            .filter(|((_, bucket), _)| *bucket >= since)
            .map(|(_, c)| c.clone())
            .collect();
        rows.sort_by_key(|c| (c.bucket, c.width_secs));
        Ok(rows)
    }

    async fn counter_totals(
        &self,
        params: &CounterTotalsParams,
    ) -> Result<Vec<CounterTotals>, JobError> {
        let CounterTotalsParams { since } = *params;
        let state = self.lock();
        let mut totals: BTreeMap<&str, CounterTotals> = BTreeMap::new();
        let buckets = state
            .operator
            .counters
            .iter()
            .flat_map(|(name, buckets)| buckets.iter().map(move |(key, c)| (name, key, c)));
        for (name, (_, bucket), c) in buckets {
            if *bucket < since {
                continue;
            }
            let t = totals
                .entry(name.as_str())
                .or_insert_with(|| CounterTotals {
                    name: name.clone(),
                    ..CounterTotals::default()
                });
            t.done += c.done;
            t.retried += c.retried;
            t.failed += c.failed;
            t.dead += c.dead;
            t.duration_ms += c.duration_ms;
        }
        Ok(totals.into_values().collect())
    }

    async fn counters_rollup(&self, params: &CountersRollupParams) -> Result<u64, JobError> {
        let CountersRollupParams { now } = *params;
        let mut state = self.lock();
        let counters = &mut state.operator.counters;
        let mut moved = 0u64;
        for buckets in counters.values_mut() {
            let moving: Vec<(u32, Timestamp)> = buckets
                .keys()
                .filter(|(width, bucket)| tier_width_at(*bucket, now) != Some(*width))
                .copied()
                .collect();
            moved += moving.len() as u64;
            for key in moving {
                let Some(c) = buckets.remove(&key) else {
                    continue;
                };
                let Some(width) = tier_width_at(key.1, now) else {
                    continue;
                };
                let bucket = bucket_start(key.1, width);
                let into = buckets
                    .entry((width, bucket))
                    .or_insert_with(|| CounterBucket {
                        bucket: Some(bucket),
                        width_secs: width,
                        ..CounterBucket::default()
                    });
                into.done += c.done;
                into.retried += c.retried;
                into.failed += c.failed;
                into.dead += c.dead;
                into.duration_ms += c.duration_ms;
            }
        }
        Ok(moved)
    }
}
