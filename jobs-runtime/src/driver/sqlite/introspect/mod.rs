//! The SQLite driver's [`JobIntrospection`]: the Postgres statements
//! (`driver/postgres/sql/introspect_*.sql`) in SQLite's terms, with the same answers and the
//! same refusals. Reads go to the reader pool; every write goes through the one writer
//! connection, and a verb that reads before it writes does both in one `BEGIN IMMEDIATE`
//! transaction, which holds the database's write lock from its first statement (what
//! Postgres' `FOR UPDATE` gives its statements). The counters are not written here: the
//! `x_job_counters_count` trigger writes one delta row per settle; the rollup folds them.
//!
//! Postgres announces the queues a requeue, promote or resume fills on its wake channel. Here
//! the in-process worker is woken by the operator handle itself, and the other processes on
//! the file find the rows at their next poll (the `data_version` wake names only queues that
//! received new rows).

mod bulk;
mod counters;
pub(super) mod history;
mod list;
mod registry;
mod verbs;

use async_trait::async_trait;

use super::SqliteDriver;
use crate::driver::introspect::*;
use crate::driver::introspect::{
    CounterTotalsParams, CountersParams, CountersRollupParams, JobPromoteParams, JobRemoveParams,
    QueuePauseParams, QueueResumeParams, WorkerForgetParams, WorkerListParams,
};
use crate::driver::records::JobRecord;
use crate::error::JobError;

#[async_trait]
impl JobIntrospection for SqliteDriver {
    async fn job_list(&self, params: &JobListParams) -> Result<JobPage, JobError> {
        list::job_list(&self.reader, params).await
    }

    async fn job_remove(&self, params: &JobRemoveParams) -> Result<JobRecord, JobError> {
        let removed = verbs::remove(&self.writer, params).await?;
        // A live job removed is gone for its dependents as a finished one is.
        super::dependencies::release_after(&self.writer, params.now).await;
        Ok(removed)
    }

    async fn job_requeue(&self, params: &JobRequeueParams) -> Result<JobRecord, JobError> {
        verbs::requeue(&self.writer, params).await
    }

    async fn job_promote(&self, params: &JobPromoteParams) -> Result<JobRecord, JobError> {
        verbs::promote(&self.writer, params).await
    }

    async fn job_requeue_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        bulk::requeue_many(&self.writer, params).await
    }

    async fn job_remove_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        let removed = bulk::remove_many(&self.writer, params).await?;
        super::dependencies::release_after(&self.writer, params.now).await;
        Ok(removed)
    }

    async fn job_promote_many(&self, params: &JobBulkParams) -> Result<BulkResult, JobError> {
        bulk::promote_many(&self.writer, params).await
    }

    async fn job_history(
        &self,
        params: &JobHistoryParams,
    ) -> Result<Vec<JobHistoryEntry>, JobError> {
        history::list(&self.reader, params).await
    }

    async fn queue_pause(&self, params: &QueuePauseParams<'_>) -> Result<(), JobError> {
        registry::pause(&self.writer, params).await
    }

    async fn queue_resume(&self, params: &QueueResumeParams<'_>) -> Result<bool, JobError> {
        registry::resume(&self.writer, params).await
    }

    async fn queue_paused(&self) -> Result<Vec<QueuePause>, JobError> {
        registry::paused(&self.reader).await
    }

    async fn worker_announce(&self, announce: &WorkerAnnounce) -> Result<(), JobError> {
        registry::announce(&self.writer, announce).await
    }

    async fn worker_forget(&self, params: &WorkerForgetParams<'_>) -> Result<(), JobError> {
        registry::forget(&self.writer, params).await
    }

    async fn worker_list(&self, params: &WorkerListParams) -> Result<Vec<WorkerRow>, JobError> {
        registry::list(&self.reader, params).await
    }

    async fn counters(&self, params: &CountersParams<'_>) -> Result<Vec<CounterBucket>, JobError> {
        counters::counters(&self.reader, params).await
    }

    async fn counter_totals(
        &self,
        params: &CounterTotalsParams,
    ) -> Result<Vec<CounterTotals>, JobError> {
        counters::totals(&self.reader, params).await
    }

    async fn counters_rollup(&self, params: &CountersRollupParams) -> Result<u64, JobError> {
        counters::rollup(&self.writer, params).await
    }
}
