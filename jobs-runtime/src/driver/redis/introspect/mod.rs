//! The Redis driver's [`JobIntrospection`]: the operator surface as Lua scripts, each atomic on
//! the server and each in one slot, with the bounds, pages and refusals of the port's shared
//! rules (`driver::introspect::rules`).
//!
//! What is atomic, and what is not:
//!
//! - A verb on one job (remove, requeue, requeue from a step, promote) is one script in the
//!   job's queue (found through the id index): the check, the change (through `lib.lua`'s
//!   `change` or `delete`, which keep every index, the live key and the counters) and the
//!   history row land together, or a refusal writes nothing.
//! - A queue's pause is its `PAUSE` hash in the queue's slot, which the claim script reads in
//!   its own script: a pause holds from the next claim on.
//! - A bulk verb is atomic per queue: one script moves a queue's share of the rows, each with
//!   its history row. Over several queues it first asks each queue (read only) for its oldest
//!   movable rows, picks the oldest [`MAX_BULK_ROWS`] over all of them, then moves each
//!   queue's share; rows that change between the two passes are judged again by the moving
//!   script, so a row is never moved twice nor out of its state, but `remaining` is as of each
//!   queue's own script.
//! - Lists, counters and paused queues walk the queues one script each and merge in Rust: each
//!   queue's share is read at one instant, the whole is not a snapshot. A list page reads a
//!   bounded stretch of a queue's index per script and goes on in the next one, so no script
//!   walks a whole large queue.
//! - The worker registry lives in the operator's own slot (`Keys::area("ops")`), one script
//!   per call.
//!
//! `list.rs`, `verbs.rs`, `bulk.rs`, `history.rs`, `counters.rs` and `registry.rs` (pauses and
//! workers) hold the answers; the scripts are `lua/introspect_*.lua`.

mod bulk;
mod counters;
mod history;
mod list;
mod registry;
mod verbs;

use async_trait::async_trait;

use super::codec::{fields, job};
use super::RedisDriver;
use crate::driver::introspect::*;
use crate::driver::introspect::{
    CounterTotalsParams, CountersParams, CountersRollupParams, JobPromoteParams, JobRemoveParams,
    QueuePauseParams, QueueResumeParams, WorkerForgetParams, WorkerListParams,
};
use crate::driver::records::JobRecord;
use crate::error::JobError;

/// A job's fields as a script answers them (pairs), as its record.
fn record(flat: Vec<String>) -> Result<JobRecord, JobError> {
    job(&fields(flat))
}

#[async_trait]
impl JobIntrospection for RedisDriver {
    async fn job_list(&self, params: &JobListParams) -> Result<JobPage, JobError> {
        list::job_list(self, params).await
    }

    async fn job_remove(&self, params: &JobRemoveParams) -> Result<JobRecord, JobError> {
        let removed = verbs::remove(self, params).await?;
        // A live job removed is gone for its dependents as a finished one is.
        let queue = std::sync::Arc::from(removed.queue.as_str());
        super::dependencies::release_after(self, vec![queue], params.now).await;
        Ok(removed)
    }

    async fn job_requeue(&self, params: &JobRequeueParams) -> Result<JobRecord, JobError> {
        verbs::requeue(self, params).await
    }

    async fn job_promote(&self, params: &JobPromoteParams) -> Result<JobRecord, JobError> {
        verbs::promote(self, params).await
    }

    async fn job_requeue_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        bulk::run(self, Bulk::Requeue, params).await
    }

    async fn job_remove_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        let removed = bulk::run(self, Bulk::Remove, params).await?;
        let queues = super::dependencies::every_queue(self).await;
        super::dependencies::release_after(self, queues, params.now).await;
        Ok(removed)
    }

    async fn job_promote_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        bulk::run(self, Bulk::Promote, params).await
    }

    async fn job_history(
        &self,
        params: &JobHistoryParams,
    ) -> Result<Vec<JobHistoryEntry>, JobError> {
        history::list(self, params).await
    }

    async fn queue_pause(&self, params: &QueuePauseParams<'_>) -> Result<(), JobError> {
        registry::pause(self, params).await
    }

    async fn queue_resume(&self, params: &QueueResumeParams<'_>) -> Result<bool, JobError> {
        registry::resume(self, params).await
    }

    async fn queue_paused(&self) -> Result<Vec<QueuePause>, JobError> {
        registry::paused(self).await
    }

    async fn worker_announce(&self, announce: &WorkerAnnounce) -> Result<(), JobError> {
        registry::announce(self, announce).await
    }

    async fn worker_forget(&self, params: &WorkerForgetParams<'_>) -> Result<(), JobError> {
        registry::forget(self, params).await
    }

    async fn worker_list(&self, params: &WorkerListParams) -> Result<Vec<WorkerRow>, JobError> {
        registry::list(self, params).await
    }

    async fn counters(&self, params: &CountersParams<'_>) -> Result<Vec<CounterBucket>, JobError> {
        counters::buckets(self, params).await
    }

    async fn counter_totals(
        &self,
        params: &CounterTotalsParams,
    ) -> Result<Vec<CounterTotals>, JobError> {
        counters::totals(self, params).await
    }

    async fn counters_rollup(&self, params: &CountersRollupParams) -> Result<u64, JobError> {
        counters::rollup(self, params).await
    }
}
