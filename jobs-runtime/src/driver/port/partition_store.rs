//! The partitions of an app's range-partitioned tables, kept ready by the partitions job
//! (`crate::partitions`): list a table's partitions, create one, drop one, each DDL statement
//! under a lock timeout. Postgres has it (`PgPartitions`, over the store's own pool or an
//! app's); a store without declarative partitions answers `None` from
//! [`JobDriver::partition_store`](super::JobDriver::partition_store).

use std::time::Duration;

use async_trait::async_trait;
use chrono::NaiveDate;

use crate::error::JobError;

/// One partition: its name and the dates it holds, `[from, to)` in UTC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRange {
    /// The partition's table name (unqualified; it lives in its parent's schema).
    pub name: String,
    /// The first day it holds.
    pub from: NaiveDate,
    /// The first day it no longer holds.
    pub to: NaiveDate,
}

/// What the partitions job asks of a store with declarative partitions.
#[async_trait]
pub trait PartitionStore: Send + Sync {
    /// The names of the partitions attached to `table` (`events` or `app.events`).
    /// `X_JOB_DECLARATION_INVALID` when `table` does not exist or is not range-partitioned.
    async fn partitions_of(&self, table: &str) -> Result<Vec<String>, JobError>;

    /// Creates `range` as a partition of `table` unless a table of that name exists; answers
    /// whether it created one. Waits for locks at most `lock_timeout`
    /// (`X_DB_LOCK_TIMEOUT`, retryable).
    async fn partition_create(
        &self,
        table: &str,
        range: &PartitionRange,
        lock_timeout: Duration,
    ) -> Result<bool, JobError>;

    /// Drops the partition `name` of `table` if it exists; answers whether it dropped one.
    /// Waits for locks at most `lock_timeout` (`X_DB_LOCK_TIMEOUT`, retryable).
    async fn partition_drop(
        &self,
        table: &str,
        name: &str,
        lock_timeout: Duration,
    ) -> Result<bool, JobError>;
}
