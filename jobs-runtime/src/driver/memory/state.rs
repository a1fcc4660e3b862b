//! The memory driver's tables: the jobs with their claim indexes (queued rows per queue and
//! tenant, running rows by lease), the live keys, the steps and the events, all behind the
//! driver's one lock.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use super::live_keys::{LiveKey, LiveKeys};
use super::{introspect, names};
use crate::clock::Timestamp;
use crate::driver::records::*;

#[derive(Debug, Default)]
pub(super) struct MemoryState {
    pub(super) jobs: HashMap<JobId, StoredJob>,
    /// `(name, tenant or "", key)` -> the job holding it, live or inside its unique period: the
    /// partial unique index.
    pub(super) live_keys: LiveKeys,
    /// The claim's indexes, in claim order `(due, insertion, id)`: queued rows per queue,
    /// tenant and priority class (highest first), due at their `run_at` (the fair claim reads
    /// each tenant's heads without walking another tenant's backlog, nor a class's delayed
    /// rows), and running rows, due when their lease lapses.
    pub(super) queued: HashMap<String, BTreeMap<String, Classes>>,
    pub(super) running: DueSet,
    pub(super) steps: HashMap<RunId, BTreeMap<String, StepRecord>>,
    pub(super) events: VecDeque<StoredEvent>,
    pub(super) event_seq: i64,
    pub(super) seq: u64,
    /// Queue pauses, worker rows and counters (the operator surface).
    pub(super) operator: introspect::OperatorState,
    /// The shared job and queue names the stored jobs hand to their claims.
    pub(super) names: names::Names,
    /// Which jobs depend on which.
    pub(super) edges: super::dependencies::DependencyEdges,
    /// The groups (invoked children, batches) and the links they make.
    pub(super) groups: super::groups::Groups,
    /// The queues of dependents released (and of group waiters woken) since the driver last
    /// took them, for its wake.
    pub(super) released: Vec<String>,
}

/// Rows in claim order: `(due, insertion, id)`.
pub(super) type DueSet = BTreeSet<(Timestamp, u64, JobId)>;

/// A tenant's queued rows by priority class, keyed by the priority negated so the highest
/// class comes first.
pub(super) type Classes = BTreeMap<i16, DueSet>;

#[derive(Debug)]
pub(super) struct StoredJob {
    /// The row, but for its input and traceparent (always `Null` and `None` here: they are
    /// kept below; read rows out with [`StoredJob::row`]).
    pub(super) record: JobRecord,
    pub(super) seq: u64,
    /// What a claim hands over without a copy: the input, the name and the queue (the queue is
    /// also what the claim indexes are read by: one copy per queue, warm in cache).
    pub(super) input: Arc<serde_json::Value>,
    pub(super) name: Arc<str>,
    pub(super) queue: Arc<str>,
    pub(super) traceparent: Option<Arc<str>>,
    /// [`LiveKey::hash`] of its live key, to free it.
    pub(super) live_hash: u64,
}

#[derive(Debug)]
pub(super) struct StoredEvent {
    pub(super) mark: i64,
    pub(super) expires_at: Timestamp,
    pub(super) event: JobEvent,
}

impl StoredJob {
    /// The whole row, its input included.
    pub(super) fn row(&self) -> JobRecord {
        JobRecord {
            input: (*self.input).clone(),
            traceparent: self.traceparent.as_deref().map(String::from),
            ..self.record.clone()
        }
    }

    pub(super) fn due_at(&self) -> Option<Timestamp> {
        match self.record.state {
            JobState::Ready | JobState::Delayed | JobState::Suspended => Some(self.record.run_at),
            JobState::Running => self.record.visible_at,
            _ => None,
        }
    }

    pub(super) fn held_by(&self, by: &ClaimIdentity) -> bool {
        self.record.state == JobState::Running
            && self.record.claimed_by.as_deref() == Some(&*by.worker_id)
            && self.record.claims == by.claim
    }
}

impl MemoryState {
    /// Applies `change` to a job and keeps the claim index and the live-key index in step; a
    /// job that stops being live settles its dependents (`dependencies.rs`).
    pub(super) fn update(&mut self, id: JobId, change: impl FnOnce(&mut JobRecord)) {
        if let Some(ended_at) = self.set_state(id, change) {
            if self.edges.has_dependents(id) {
                self.settle_dependents(id, ended_at);
            }
        }
    }

    /// [`MemoryState::update`] without the dependents' settle (which uses it itself); answers
    /// when the job stopped being live, if this change ended it. The groups counting it count
    /// it here (`groups.rs`).
    pub(super) fn set_state(
        &mut self,
        id: JobId,
        change: impl FnOnce(&mut JobRecord),
    ) -> Option<Timestamp> {
        self.unindex(id);
        let job = self.jobs.get_mut(&id)?;
        let was_live = job.record.state.is_live();
        let before = introspect::Before::of(&job.record);
        change(&mut job.record);
        self.operator.observe(before, &job.record);
        let ended = was_live && !job.record.state.is_live();
        let ended_at = ended.then_some(job.record.updated_at);
        // A job with a unique period (`unique_until`) keeps its key when it finishes: a lookup
        // after the period finds it lapsed and files the next job in its place.
        if ended && job.record.unique_until.is_none() {
            self.live_keys.release(job.live_hash, id);
        }
        self.index(id);
        if let Some(at) = ended_at {
            if self.groups.watches(id) {
                self.settle_groups(id, at);
            }
        }
        ended_at
    }

    /// Files a job in the claim indexes its state puts it in.
    pub(super) fn index(&mut self, id: JobId) {
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
            let class = -job.record.priority;
            match tenants.get_mut(tenant) {
                Some(classes) => {
                    classes.entry(class).or_default().insert(entry);
                }
                None => {
                    tenants.insert(
                        tenant.to_string(),
                        Classes::from([(class, DueSet::from([entry]))]),
                    );
                }
            }
        }
    }

    /// Takes a job out of the claim indexes (before its state or times change).
    pub(super) fn unindex(&mut self, id: JobId) {
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
            if let Some(classes) = tenants.get_mut(tenant) {
                let class = -job.record.priority;
                if let Some(rows) = classes.get_mut(&class) {
                    rows.remove(&entry);
                    if rows.is_empty() {
                        classes.remove(&class);
                    }
                }
                if classes.is_empty() {
                    tenants.remove(tenant);
                }
            }
        }
    }

    /// Removes a job and its index entries (an `enqueue_many` taking its inserts back).
    pub(super) fn remove(&mut self, id: JobId) {
        self.unindex(id);
        let Some(job) = self.jobs.remove(&id) else {
            return;
        };
        self.live_keys.release(job.live_hash, id);
        self.edges.forget(id);
        self.groups.forget(id);
    }

    /// The job other than `except` that holds `key` (of hash `hash`) at `now`: a live one, or one
    /// inside its unique period ([`holds_key`]). A finished job whose period lapsed holds
    /// nothing: the next job filed under the key replaces its entry.
    pub(super) fn key_holder(
        &self,
        hash: u64,
        key: LiveKey<'_>,
        now: Timestamp,
        except: Option<JobId>,
    ) -> Option<JobId> {
        let id = self.live_keys.holder_at(hash, key, |id| self.record(id))?;
        let job = self.jobs.get(&id)?;
        let r = &job.record;
        (Some(id) != except && holds_key(r.state, r.unique_until, now)).then_some(id)
    }

    /// The row of a stored job, for the live-key index.
    pub(super) fn record(&self, id: &JobId) -> Option<&JobRecord> {
        self.jobs.get(id).map(|j| &j.record)
    }

    pub(super) fn fenced(&self, id: JobId, by: &ClaimIdentity) -> bool {
        if planted!(SettleWithoutFence) {
            return self
                .jobs
                .get(&id)
                .is_some_and(|j| j.record.state == JobState::Running);
        }
        self.jobs.get(&id).is_some_and(|j| j.held_by(by))
    }
}
