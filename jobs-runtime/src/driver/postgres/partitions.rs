//! [`PgPartitions`]: the partitions of an app's range-partitioned tables on Postgres, over the
//! store's own pool (`PostgresDriver::partition_store`) or an app's (`PgPartitions::new`).
//! Identifiers cannot be bound, so the DDL is built by `sql::PartitionDdl`, which checks each
//! against a strict grammar and quotes it; every DDL statement runs in a transaction of its
//! own, its `lock_timeout` set by a bound `set_config`.

use std::time::Duration;

use async_trait::async_trait;
use sqlx::{PgPool, SqlStr};

use super::classify::{classify, Op};
use super::sql::{plain_identifier, quoted, quoted_partition, PartitionDdl};
use crate::driver::partition_store::{PartitionRange, PartitionStore};
use crate::error::{ErrorCode, JobError};

/// The partitions of range-partitioned tables in one Postgres database.
#[derive(Debug, Clone)]
pub struct PgPartitions {
    pool: PgPool,
}

impl PgPartitions {
    /// Over `pool` (the app's database, which may be another than the jobs').
    pub fn new(pool: PgPool) -> Self {
        PgPartitions { pool }
    }
}

/// `events` or `app.events`, each part a plain identifier of at most 63 bytes.
pub(crate) fn check_table(table: &str) -> Result<(), JobError> {
    let parts: Vec<&str> = table.split('.').collect();
    if parts.len() <= 2 && parts.iter().all(|p| plain_identifier(p)) {
        return Ok(());
    }
    Err(JobError::new(
        ErrorCode::JobDeclarationInvalid,
        "a partitioned table's name is not `table` or `schema.table` of plain identifiers",
    )
    .with_fix(
        "name it with letters, digits and `_`, starting with a letter or `_`, at most 63 bytes \
         a part",
    ))
}

impl PgPartitions {
    /// Runs one DDL statement in its own transaction under `lock_timeout`.
    async fn ddl(&self, op: Op, statement: SqlStr, lock_timeout: Duration) -> Result<(), JobError> {
        let mut tx = super::pooled::begin(&self.pool)
            .await
            .map_err(|e| classify(op, e))?;
        let millis = lock_timeout.as_millis().clamp(1, i32::MAX as u128);
        sqlx::query("select set_config('lock_timeout', $1, true)")
            .bind(format!("{millis}ms"))
            .execute(&mut *tx)
            .await
            .map_err(|e| classify(op, e))?;
        sqlx::query(statement)
            .execute(&mut *tx)
            .await
            .map_err(|e| classify(op, e))?;
        tx.commit().await.map_err(|e| classify(op, e))
    }

    async fn exists(&self, table: &str, name: &str) -> Result<bool, JobError> {
        let qualified = quoted_partition(table, name);
        sqlx::query_scalar("select to_regclass($1) is not null")
            .bind(qualified)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| classify(Op::PartitionsOf, e))
    }
}

#[async_trait]
impl PartitionStore for PgPartitions {
    async fn partitions_of(&self, table: &str) -> Result<Vec<String>, JobError> {
        check_table(table)?;
        // The parent must be range-partitioned ('r'); its children are its partitions.
        let strategy: Option<String> = sqlx::query_scalar(
            "select p.partstrat::text from pg_partitioned_table p \
             where p.partrelid = to_regclass($1)",
        )
        .bind(quoted(table))
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| classify(Op::PartitionsOf, e))?;
        if strategy.as_deref() != Some("r") {
            return Err(JobError::new(
                ErrorCode::JobDeclarationInvalid,
                format!("table `{table}` is not a range-partitioned table in this database"),
            )
            .with_fix(
                "create it `partition by range (<timestamp or date column>)` in a migration \
                 before the partitions job runs, or leave it out of the job",
            ));
        }
        sqlx::query_scalar(
            "select c.relname::text from pg_inherits i join pg_class c on c.oid = i.inhrelid \
             where i.inhparent = to_regclass($1) order by 1",
        )
        .bind(quoted(table))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| classify(Op::PartitionsOf, e))
    }

    async fn partition_create(
        &self,
        table: &str,
        range: &PartitionRange,
        lock_timeout: Duration,
    ) -> Result<bool, JobError> {
        // Built first: it refuses a name that is not plain before anything is read.
        let statement = PartitionDdl::Create {
            parent: table,
            name: &range.name,
            from: range.from,
            to: range.to,
        }
        .statement()?;
        if self.exists(table, &range.name).await? {
            return Ok(false);
        }
        self.ddl(Op::PartitionCreate, statement, lock_timeout)
            .await?;
        Ok(true)
    }

    async fn partition_drop(
        &self,
        table: &str,
        name: &str,
        lock_timeout: Duration,
    ) -> Result<bool, JobError> {
        let statement = PartitionDdl::Drop {
            parent: table,
            name,
        }
        .statement()?;
        if !self.exists(table, name).await? {
            return Ok(false);
        }
        self.ddl(Op::PartitionDrop, statement, lock_timeout).await?;
        Ok(true)
    }
}
