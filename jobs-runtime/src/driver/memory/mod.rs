//! The in-memory driver: the same claim, fence and settle rules as Postgres, in one process.
//! For tests, demos and the quickstart; nothing survives a restart.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

// Fx hashing: the maps are keyed by ids and names this process made, and SipHash was a tenth
// of an end-to-end run's instructions.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

mod backfill;
mod introspect;
mod lease;
mod ledger_book;
mod live_keys;
mod names;
mod scheduler;
mod webhook_ledger;

pub use lease::MemoryLeaseStore;
pub use ledger_book::MemoryBook;
pub use webhook_ledger::{MemoryWebhookLedger, MEMORY_LEDGER_RING};

use crate::clock::{add, Timestamp};
use crate::driver::introspect::JobVerb;
use crate::driver::records::*;
use crate::driver::{
    EventFindParams, JobCancelParams, JobDriver, JobGetParams, QueueStatsParams, StepListParams,
    StepPutParams,
};
use crate::error::{ErrorCode, JobError};
use live_keys::{LiveKey, LiveKeys};

/// The memory bus keeps at most this many events; the oldest are evicted first.
pub const MAX_MEMORY_EVENTS: usize = 10_000;

/// The in-memory [`JobDriver`].
///
/// ```
/// use jobs::{Jobs, driver::MemoryDriver};
/// let jobs = Jobs::new(MemoryDriver::new());
/// ```
#[derive(Debug, Default)]
pub struct MemoryDriver {
    state: Mutex<MemoryState>,
    scheduler: Mutex<scheduler::SchedulerState>,
    leases: crate::driver::lease::MemoryLeaseStore,
    backfills: backfill::MemoryBackfills,
    book: MemoryBook,
    webhooks: MemoryWebhookLedger,
    /// Set by [`MemoryDriver::without_lease_store`].
    no_lease_store: bool,
}

#[derive(Debug, Default)]
struct MemoryState {
    jobs: HashMap<JobId, StoredJob>,
    /// `(name, tenant or "", key)` -> the live job holding it: the partial unique index.
    live_keys: LiveKeys,
    /// The claim's indexes, in claim order `(due, insertion, id)`: queued rows per queue and
    /// tenant, due at their `run_at` (the fair claim reads each tenant's head without walking
    /// another tenant's backlog), and running rows, due when their lease lapses.
    queued: HashMap<String, BTreeMap<String, DueSet>>,
    running: DueSet,
    steps: HashMap<RunId, BTreeMap<String, StepRecord>>,
    events: VecDeque<StoredEvent>,
    event_seq: i64,
    seq: u64,
    /// Queue pauses, worker rows and counters (the operator surface).
    operator: introspect::OperatorState,
    /// The shared job and queue names the stored jobs hand to their claims.
    names: names::Names,
}

/// Rows in claim order: `(due, insertion, id)`.
type DueSet = BTreeSet<(Timestamp, u64, JobId)>;

#[derive(Debug)]
struct StoredJob {
    /// The row, but for its input and traceparent (always `Null` and `None` here: they are
    /// kept below; read rows out with [`StoredJob::row`]).
    record: JobRecord,
    seq: u64,
    /// What a claim hands over without a copy: the input, the name and the queue (the queue is
    /// also what the claim indexes are read by: one copy per queue, warm in cache).
    input: Arc<serde_json::Value>,
    name: Arc<str>,
    queue: Arc<str>,
    traceparent: Option<Arc<str>>,
    /// [`LiveKey::hash`] of its live key, to free it.
    live_hash: u64,
}

#[derive(Debug)]
struct StoredEvent {
    mark: i64,
    expires_at: Timestamp,
    event: JobEvent,
}

impl StoredJob {
    /// The whole row, its input included.
    fn row(&self) -> JobRecord {
        JobRecord {
            input: (*self.input).clone(),
            traceparent: self.traceparent.as_deref().map(String::from),
            ..self.record.clone()
        }
    }

    fn due_at(&self) -> Option<Timestamp> {
        match self.record.state {
            JobState::Ready | JobState::Delayed | JobState::Suspended => Some(self.record.run_at),
            JobState::Running => self.record.visible_at,
            _ => None,
        }
    }

    fn held_by(&self, by: &ClaimIdentity) -> bool {
        self.record.state == JobState::Running
            && self.record.claimed_by.as_deref() == Some(&*by.worker_id)
            && self.record.claims == by.claim
    }
}

impl MemoryDriver {
    /// An empty driver.
    pub fn new() -> Self {
        Self::default()
    }

    /// A memory driver that offers no lease store, like a driver that cannot hold fleet-wide
    /// slots: a worker then refuses jobs that declare `concurrency`
    /// (`X_JOB_CONCURRENCY_UNENFORCEABLE`). For testing that refusal.
    pub fn without_lease_store() -> Self {
        MemoryDriver {
            no_lease_store: true,
            ..Self::default()
        }
    }

    /// The earliest time any live job becomes claimable (a queued row's `run_at`, a running
    /// row's lease expiry). The test kit advances its clock to it.
    pub fn next_due(&self) -> Option<Timestamp> {
        let state = self.lock();
        // The earliest lease to lapse, or the earliest head of any queue and tenant.
        let running = state.running.first().map(|(at, _, _)| *at);
        let queued = state
            .queued
            .values()
            .flat_map(|tenants| tenants.values())
            .filter_map(|rows| rows.first().map(|(at, _, _)| *at))
            .min();
        running.into_iter().chain(queued).min()
    }

    /// How many jobs are live (ready, delayed, running or suspended).
    pub fn live_count(&self) -> usize {
        self.lock()
            .jobs
            .values()
            .filter(|j| j.record.state.is_live())
            .count()
    }

    /// Every job, oldest first.
    pub fn all_jobs(&self) -> Vec<JobRecord> {
        let state = self.lock();
        let mut jobs: Vec<_> = state.jobs.values().collect();
        jobs.sort_by_key(|j| j.seq);
        jobs.into_iter().map(|j| j.row()).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        // A panic while holding the lock leaves consistent maps (every mutation is a few
        // assignments), so keep serving rather than poisoning every later call.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// [`MemoryDriver::lock`] for the worker's hot path (claims and acks): while another
    /// thread holds the state, this task yields to the runtime instead of parking its thread,
    /// so the thread runs other attempts meanwhile rather than sleeping in the kernel and
    /// paying a wake-up to come back.
    async fn lock_yielding(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        // A holder that keeps the state longer than a few turns (an operator's listing of a
        // large store) is waited for the ordinary way.
        for _ in 0..YIELDS_BEFORE_PARKING {
            match self.state.try_lock() {
                Ok(state) => return state,
                Err(std::sync::TryLockError::Poisoned(e)) => return e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
            // Awaited after the match, not in its arm: the failed try's result is gone by
            // then, so the future stays `Send`.
            tokio::task::yield_now().await;
        }
        self.lock()
    }
}

/// How many turns [`MemoryDriver::lock_yielding`] gives other tasks before it parks its
/// thread on the lock like any other caller.
const YIELDS_BEFORE_PARKING: u32 = 64;

impl MemoryState {
    /// Applies `change` to a job and keeps the claim index and the live-key index in step.
    fn update(&mut self, id: JobId, change: impl FnOnce(&mut JobRecord)) {
        self.unindex(id);
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let was_live = job.record.state.is_live();
        let before = introspect::Before::of(&job.record);
        change(&mut job.record);
        self.operator.observe(before, &job.record);
        let now_live = job.record.state.is_live();
        if was_live && !now_live {
            self.live_keys.release(job.live_hash, id);
        }
        self.index(id);
    }

    /// Files a job in the claim indexes its state puts it in.
    fn index(&mut self, id: JobId) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let Some(at) = job.due_at() else {
            return;
        };
        let entry = (at, job.seq, id);
        if job.record.state == JobState::Running {
            self.running.insert(entry);
        } else {
            // The queue's and tenant's names are copied only the first time they are filed.
            let tenant = job.record.tenant_id.as_deref().unwrap_or("");
            if !self.queued.contains_key(&*job.queue) {
                self.queued.insert(job.queue.to_string(), BTreeMap::new());
            }
            let tenants = self.queued.get_mut(&*job.queue).expect("filed just above");
            match tenants.get_mut(tenant) {
                Some(rows) => {
                    rows.insert(entry);
                }
                None => {
                    tenants.insert(tenant.to_string(), DueSet::from([entry]));
                }
            }
        }
    }

    /// Takes a job out of the claim indexes (before its state or times change).
    fn unindex(&mut self, id: JobId) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let Some(at) = job.due_at() else {
            return;
        };
        let entry = (at, job.seq, id);
        if job.record.state == JobState::Running {
            self.running.remove(&entry);
            return;
        }
        if let Some(tenants) = self.queued.get_mut(&*job.queue) {
            let tenant = job.record.tenant_id.as_deref().unwrap_or("");
            if let Some(rows) = tenants.get_mut(tenant) {
                rows.remove(&entry);
                if rows.is_empty() {
                    tenants.remove(tenant);
                }
            }
        }
    }

    /// Removes a job and its index entries (an `enqueue_many` taking its inserts back).
    fn remove(&mut self, id: JobId) {
        self.unindex(id);
        let Some(job) = self.jobs.remove(&id) else {
            return;
        };
        self.live_keys.release(job.live_hash, id);
    }

    /// The row of a stored job, for the live-key index.
    fn record(&self, id: &JobId) -> Option<&JobRecord> {
        self.jobs.get(id).map(|j| &j.record)
    }

    fn fenced(&self, id: JobId, by: &ClaimIdentity) -> bool {
        self.jobs.get(&id).is_some_and(|j| j.held_by(by))
    }

    /// Inserts `request` as of `now` (its own `now`, or its batch's).
    fn enqueue(
        &mut self,
        request: &EnqueueRequest,
        now: Timestamp,
    ) -> Result<EnqueueResult, JobError> {
        let key = LiveKey {
            name: &request.name,
            tenant: request.tenant_id.as_deref().unwrap_or(""),
            key: &request.idempotency_key,
        };
        // An id that already names a row (an outbox re-publish) inserts nothing and
        // answers that row, whatever the conflict policy.
        if let Some(existing) = self.jobs.get(&request.id) {
            let r = &existing.record;
            return EnqueueResult::held(request, r.id, r.run_id, true);
        }
        let live_hash = key.hash();
        let holder = self
            .live_keys
            .holder_at(live_hash, key, |id| self.record(id));
        if let Some(existing) = holder.and_then(|id| self.jobs.get(&id)) {
            let r = &existing.record;
            return EnqueueResult::held(request, r.id, r.run_id, false);
        }
        let state = if request.run_at <= now {
            JobState::Ready
        } else {
            JobState::Delayed
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
            run_at: request.run_at,
            created_at: now,
            updated_at: now,
            last_error: None,
            last_error_code: None,
            claimed_by: None,
            claims: 0,
            visible_at: None,
            progress: None,
            // Kept beside the row, shared with its claims.
            traceparent: None,
            actor: request.actor.clone(),
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
        self.jobs.insert(request.id, job);
        self.index(request.id);
        let jobs = &self.jobs;
        self.live_keys.insert(live_hash, key, request.id, |id| {
            jobs.get(id).map(|j| &j.record)
        });
        Ok(EnqueueResult {
            id: request.id,
            run_id: request.run_id,
            deduped: false,
        })
    }
}

#[async_trait]
impl JobDriver for MemoryDriver {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn scheduler_store(&self) -> Option<&dyn super::SchedulerStore> {
        Some(self)
    }

    fn introspect(&self) -> Option<&dyn super::JobIntrospection> {
        Some(self)
    }

    fn backfill_store(&self) -> Option<&dyn super::BackfillStore> {
        Some(&self.backfills)
    }

    fn ledger_book(&self) -> Option<&dyn super::LedgerBook> {
        Some(&self.book)
    }

    fn webhook_ledger(&self) -> Option<&dyn super::WebhookLedger> {
        Some(&self.webhooks)
    }

    fn lease_store(&self) -> Option<&dyn crate::driver::lease::LeaseStore> {
        if self.no_lease_store {
            return None;
        }
        Some(&self.leases)
    }

    async fn job_enqueue(&self, request: &EnqueueRequest) -> Result<EnqueueResult, JobError> {
        self.lock().enqueue(request, request.now)
    }

    async fn job_enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        // One `now` for the batch, as Postgres' one statement has.
        let Some(now) = requests.iter().map(|r| r.now).max() else {
            return Ok(Vec::new());
        };
        let mut state = self.lock();
        let mut out = Vec::with_capacity(requests.len());
        for request in requests {
            match state.enqueue(request, now) {
                Ok(result) => out.push(result),
                Err(error) => {
                    // All of them or none, as Postgres' one transaction: take this batch's
                    // inserts back.
                    for inserted in out.iter().filter(|r| !r.deduped) {
                        state.remove(inserted.id);
                    }
                    return Err(error);
                }
            }
        }
        Ok(out)
    }

    async fn job_claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
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
        // slots per tenant): never a walk through one tenant's backlog.
        let mut due: Vec<(Timestamp, u64, JobId)> = Vec::with_capacity(wanted);
        due.extend(
            state
                .running
                .iter()
                .take_while(|(at, _, _)| *at <= params.now)
                .copied(),
        );
        for (queue, limit) in &slots {
            let Some(tenants) = state.queued.get(*queue) else {
                continue;
            };
            for rows in tenants.values() {
                due.extend(
                    rows.iter()
                        .take_while(|(at, _, _)| *at <= params.now)
                        .take(*limit as usize)
                        .copied(),
                );
            }
        }
        due.sort_unstable();
        let mut result = ClaimResult {
            jobs: Vec::with_capacity(due.len().min(wanted)),
            exhausted: Vec::new(),
        };
        // Each tenant's due rows, in due order, make its turns (at most a queue's slots of
        // them); the queue then takes turn 1 of every tenant, turn 2, ... as Postgres does.
        // The choice only reads the rows (names are borrowed, never copied); the writes follow.
        let mut exhausted: Vec<JobId> = Vec::new();
        let mut chosen: Vec<JobId> = Vec::with_capacity(result.jobs.capacity());
        {
            let mut turns: HashMap<(usize, &str), u32> = HashMap::default();
            // `(queue, turn, due order, id)`.
            let mut candidates: Vec<(&str, u32, usize, JobId)> = Vec::with_capacity(due.len());
            for (order, (_, _, id)) in due.into_iter().enumerate() {
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
            });
        }
        Ok(result)
    }

    async fn job_ack(&self, params: &AckParams) -> Result<bool, JobError> {
        let mut state = self.lock_yielding().await;
        if !state.fenced(params.job_id, &params.by) {
            return Ok(false);
        }
        state.update(params.job_id, |r| {
            r.state = JobState::Done;
            r.visible_at = None;
            r.last_error = None;
            r.last_error_code = None;
            r.updated_at = params.now;
        });
        Ok(true)
    }

    fn batches_acks(&self) -> bool {
        false
    }

    async fn job_nack(&self, params: &NackParams) -> Result<bool, JobError> {
        let mut state = self.lock();
        if !state.fenced(params.job_id, &params.by) {
            return Ok(false);
        }
        state.update(params.job_id, |r| {
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
        Ok(true)
    }

    async fn job_purge(&self, params: &JobPurgeParams) -> Result<u64, JobError> {
        let mut state = self.lock();
        let mut doomed: Vec<(Timestamp, JobId, RunId, bool)> = state
            .jobs
            .values()
            .filter_map(|j| {
                let r = &j.record;
                let done = r.state == JobState::Done;
                let cutoff = if done {
                    params.done_before
                } else {
                    params.finished_before
                };
                (!r.state.is_live() && r.updated_at < cutoff).then_some((
                    r.updated_at,
                    r.id,
                    r.run_id,
                    done,
                ))
            })
            .collect();
        doomed.sort();
        let (mut done, mut finished) = (0u32, 0u32);
        let mut gone = 0u64;
        for (_, id, run_id, is_done) in doomed {
            let count = if is_done { &mut done } else { &mut finished };
            if *count >= params.limit {
                continue;
            }
            *count += 1;
            state.remove(id);
            if !state.jobs.values().any(|j| j.record.run_id == run_id) {
                state.steps.remove(&run_id);
            }
            gone += 1;
        }
        let before = params.done_before.max(params.finished_before);
        let MemoryState { jobs, operator, .. } = &mut *state;
        operator.purge_history(|id| jobs.contains_key(id), before, params.limit);
        Ok(gone)
    }

    async fn job_heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError> {
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

    async fn job_progress(&self, params: &ProgressParams) -> Result<bool, JobError> {
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

    async fn job_get(&self, params: &JobGetParams) -> Result<Option<JobRecord>, JobError> {
        let JobGetParams { id } = *params;
        Ok(self.lock().jobs.get(&id).map(|j| j.row()))
    }

    async fn job_cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError> {
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
        let done = introspect::act(JobVerb::Cancel, None, &params.actor, now);
        state.operator.record(&cancelled, done);
        Ok(cancelled)
    }

    async fn queue_stats(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        let QueueStatsParams { now } = *params;
        let state = self.lock();
        let mut by_queue: BTreeMap<&str, QueueStats> = BTreeMap::new();
        for job in state.jobs.values() {
            let r = &job.record;
            let stats = by_queue
                .entry(r.queue.as_str())
                .or_insert_with(|| QueueStats {
                    queue: r.queue.clone(),
                    ..QueueStats::default()
                });
            match r.state {
                JobState::Ready | JobState::Delayed if r.run_at > now => stats.delayed += 1,
                JobState::Ready | JobState::Delayed => {
                    stats.ready += 1;
                    let age = (now - r.run_at).num_milliseconds().max(0) as u64;
                    stats.oldest_ready_ms = Some(stats.oldest_ready_ms.unwrap_or(0).max(age));
                }
                JobState::Running => stats.running += 1,
                JobState::Suspended => stats.suspended += 1,
                JobState::Done => stats.done += 1,
                JobState::Failed => stats.failed += 1,
                JobState::Dead => stats.dead += 1,
                JobState::Cancelled => stats.cancelled += 1,
            }
        }
        Ok(by_queue.into_values().collect())
    }

    async fn step_list(&self, params: &StepListParams) -> Result<Vec<StepRecord>, JobError> {
        let StepListParams { run_id } = *params;
        Ok(self
            .lock()
            .steps
            .get(&run_id)
            .map(|steps| steps.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn step_put(&self, params: &StepPutParams<'_>) -> Result<bool, JobError> {
        let StepPutParams { record, fence } = *params;
        let mut state = self.lock();
        if !state.fenced(fence.job_id, &fence.by) {
            return Ok(false);
        }
        state
            .steps
            .entry(record.run_id)
            .or_default()
            .insert(record.name.clone(), record.clone());
        Ok(true)
    }

    async fn event_publish(&self, event: &EventPublish) -> Result<EventId, JobError> {
        let mut state = self.lock();
        let now = event.now;
        state.events.retain(|e| e.expires_at > now);
        while state.events.len() >= MAX_MEMORY_EVENTS {
            state.events.pop_front();
        }
        state.event_seq += 1;
        let mark = state.event_seq;
        state.events.push_back(StoredEvent {
            mark,
            expires_at: add(now, event.ttl),
            event: JobEvent {
                id: event.id,
                name: event.name.clone(),
                key: event.key.clone(),
                payload: event.payload.clone(),
                published_at: now,
            },
        });
        // Wake the runs parked on this event so they resume now, not at their next poll.
        let parked: Vec<JobId> = state
            .jobs
            .values()
            .filter(|j| j.record.state == JobState::Suspended && j.record.run_at > now)
            .filter(|j| {
                state.steps.get(&j.record.run_id).is_some_and(|steps| {
                    steps.values().any(|s| {
                        s.status == StepStatus::Waiting
                            && s.wait
                                .as_ref()
                                .is_some_and(|w| w.event == event.name && w.key == event.key)
                    })
                })
            })
            .map(|j| j.record.id)
            .collect();
        for id in parked {
            state.update(id, |r| r.run_at = now);
        }
        Ok(event.id)
    }

    async fn event_purge(&self, params: &EventPurgeParams) -> Result<u64, JobError> {
        let mut state = self.lock();
        // Oldest expiry first, as the stores with an expiry index delete them.
        let mut expired: Vec<(Timestamp, i64)> = state
            .events
            .iter()
            .filter(|e| e.expires_at <= params.now)
            .map(|e| (e.expires_at, e.mark))
            .collect();
        expired.sort_unstable();
        expired.truncate(params.limit as usize);
        let doomed: HashSet<i64> = expired.into_iter().map(|(_, mark)| mark).collect();
        state.events.retain(|e| !doomed.contains(&e.mark));
        Ok(doomed.len() as u64)
    }

    async fn event_mark(&self) -> Result<String, JobError> {
        Ok(self.lock().event_seq.to_string())
    }

    async fn event_find(&self, params: &EventFindParams<'_>) -> Result<Option<JobEvent>, JobError> {
        let EventFindParams {
            name,
            key,
            since,
            now,
        } = *params;
        // A mark this driver did not write matches every stored event of the name and key.
        let mark: i64 = since.mark.parse().unwrap_or(0);
        Ok(self
            .lock()
            .events
            .iter()
            .find(|e| {
                e.mark > mark && e.expires_at > now && e.event.name == name && e.event.key == key
            })
            .map(|e| e.event.clone()))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn request(now: Timestamp) -> EnqueueRequest {
        EnqueueRequest {
            id: uuid::Uuid::now_v7(),
            run_id: uuid::Uuid::now_v7(),
            name: "held.job".to_string(),
            queue: "default".to_string(),
            input: serde_json::json!({}),
            idempotency_key: "held".to_string(),
            tenant_id: None,
            max_attempts: 3,
            run_at: now,
            on_conflict: ConflictPolicy::Dedupe,
            traceparent: None,
            actor: None,
            now,
        }
    }

    /// An ack that finds the state held by another thread gives its runtime thread to other
    /// tasks while it waits, instead of parking the thread on the lock: on a runtime of one
    /// thread, a task spawned after the ack runs before the state is let go.
    ///
    /// A current-thread runtime: both tasks are queued before either runs, and the ack runs
    /// first. (On a multi-thread runtime of one worker, the worker could poll the ack through
    /// all its yields before the test's thread spawned the second task: flaky under load.)
    #[test]
    fn a_waiting_ack_lets_its_thread_run_other_tasks() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let driver = Arc::new(MemoryDriver::new());
        let now = chrono::Utc::now();
        let job = runtime.block_on(async {
            driver.job_enqueue(&request(now)).await.expect("enqueued");
            let params = ClaimParams {
                demand: vec![QueueDemand {
                    queue: "default".to_string(),
                    limit: 1,
                }],
                worker_id: "w".into(),
                visibility_timeout: Duration::from_secs(30),
                drop_exhausted: Vec::new(),
                fair_after: String::new(),
                now,
            };
            driver
                .job_claim(&params)
                .await
                .expect("claimed")
                .jobs
                .remove(0)
        });

        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (ran_tx, ran_rx) = std::sync::mpsc::channel::<()>();
        let holder = {
            let driver = driver.clone();
            std::thread::spawn(move || {
                let _state = driver.lock();
                held_tx.send(()).expect("the test waits");
                // Let go once the other task ran; bounded, so a parked thread fails the test
                // below instead of hanging it.
                ran_rx.recv_timeout(Duration::from_secs(10)).is_ok()
            })
        };
        held_rx.recv().expect("the holder took the state");
        let landed = runtime.block_on(async {
            let ack = tokio::spawn({
                let driver = driver.clone();
                async move {
                    let params = AckParams {
                        job_id: job.id,
                        by: job.by,
                        now,
                    };
                    driver.job_ack(&params).await
                }
            });
            tokio::spawn(async move {
                let _ = ran_tx.send(());
            });
            ack.await.expect("the ack's task")
        });
        assert!(
            holder.join().expect("the holder"),
            "the waiting ack parked the runtime's only thread"
        );
        assert!(landed.expect("the ack"), "the ack landed");
    }
}
