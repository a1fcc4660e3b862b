//! The memory driver's [`JobIntrospection`]: the same answers as Postgres' statements, over the
//! queue's own maps. The counters move inside
//! [`MemoryState::update`](super::MemoryState::update), the one place a row changes state, as
//! Postgres moves them in the statement that settles the row.
//!
//! This file holds what the operator surface keeps beside the queue ([`OperatorState`]), the
//! acts and prior states the rest of the driver hands it, and the trait's forwarding; `list.rs`,
//! `verbs.rs`, `bulk.rs`, `history.rs`, `counters.rs` and `registry.rs` (pauses and workers) the
//! answers.

mod bulk;
mod counters;
mod history;
mod list;
mod registry;
mod verbs;

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap as HashMap;

use async_trait::async_trait;

use super::MemoryDriver;
use crate::clock::Timestamp;
use crate::driver::introspect::*;
use crate::driver::introspect::{
    CounterTotalsParams, CountersParams, CountersRollupParams, JobPromoteParams, JobRemoveParams,
    QueuePauseParams, QueueResumeParams, WorkerForgetParams, WorkerListParams,
};
use crate::driver::records::*;
use crate::error::JobError;
use history::HistoryRow;

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

#[async_trait]
impl JobIntrospection for MemoryDriver {
    async fn job_list(&self, params: &JobListParams) -> Result<JobPage, JobError> {
        list::job_list(self, params)
    }

    async fn job_remove(&self, params: &JobRemoveParams) -> Result<JobRecord, JobError> {
        verbs::remove(self, params)
    }

    async fn job_requeue(&self, params: &JobRequeueParams) -> Result<JobRecord, JobError> {
        verbs::requeue(self, params)
    }

    async fn job_promote(&self, params: &JobPromoteParams) -> Result<JobRecord, JobError> {
        verbs::promote(self, params)
    }

    async fn job_requeue_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        bulk::requeue_many(self, params)
    }

    async fn job_remove_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        bulk::remove_many(self, params)
    }

    async fn job_promote_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        bulk::promote_many(self, params)
    }

    async fn job_history(
        &self,
        params: &JobHistoryParams,
    ) -> Result<Vec<JobHistoryEntry>, JobError> {
        history::list(self, params)
    }

    async fn queue_pause(&self, params: &QueuePauseParams<'_>) -> Result<(), JobError> {
        registry::pause(self, params)
    }

    async fn queue_resume(&self, params: &QueueResumeParams<'_>) -> Result<bool, JobError> {
        registry::resume(self, params)
    }

    async fn queue_paused(&self) -> Result<Vec<QueuePause>, JobError> {
        registry::paused(self)
    }

    async fn worker_announce(&self, a: &WorkerAnnounce) -> Result<(), JobError> {
        registry::announce(self, a)
    }

    async fn worker_forget(&self, params: &WorkerForgetParams<'_>) -> Result<(), JobError> {
        registry::forget(self, params)
    }

    async fn worker_list(&self, params: &WorkerListParams) -> Result<Vec<WorkerRow>, JobError> {
        registry::list(self, params)
    }

    async fn counters(&self, params: &CountersParams<'_>) -> Result<Vec<CounterBucket>, JobError> {
        counters::counters(self, params)
    }

    async fn counter_totals(
        &self,
        params: &CounterTotalsParams,
    ) -> Result<Vec<CounterTotals>, JobError> {
        counters::totals(self, params)
    }

    async fn counters_rollup(&self, params: &CountersRollupParams) -> Result<u64, JobError> {
        counters::rollup(self, params)
    }
}
