//! The partitions job: keeps an app's range-partitioned Postgres tables ready, one durable
//! step per table, fired daily by its task.
//!
//! `#[partitions]` goes on the fn that names the tables (read per run, like a purge's
//! targets); it declares a job (key `partitions`: one pass at a time) and a task
//! `<name>.schedule` that fires it, by default at [`DEFAULT_PARTITIONS_CRON`] (03:17 UTC).
//! Each run creates the current period's partition and `ahead` more past it, and drops those
//! older than `retain` periods, idempotently: a second run the same day changes nothing.
//! Enqueued with `from` (a date), a run creates every partition back to that date's period and
//! drops nothing: do that once before backfilling older rows.
//!
//! ```
//! use jobs::prelude::*;
//! use jobs::partitions::{PartitionedTable, Partitions, PartitionsRequest};
//!
//! #[partitions(name = "app.partitions")] // the job `app.partitions`, its task `app.partitions.schedule`
//! fn app_partitions(_run: &Run) -> Result<Partitions, JobError> {
//!     Ok(Partitions::new()
//!         .table(PartitionedTable::daily("events").ahead(7).retain(90))
//!         .table(PartitionedTable::monthly("audit_log").ahead(2)))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! // The memory store has no partitions: the run is refused, never half-done.
//! let kit = jobs::testing::TestKit::new();
//! let job = kit.run::<AppPartitions>(PartitionsRequest::default()).await;
//! assert_eq!(job.last_error_code.as_deref(), Some("X_JOB_DECLARATION_INVALID"));
//! # }
//! ```
//!
//! # Where the DDL runs
//!
//! [`Partitions::new`] runs on the run's own store when it has declarative partitions
//! (Postgres: [`JobDriver::partition_store`](crate::driver::JobDriver::partition_store));
//! on any other store the run is refused with `X_JOB_DECLARATION_INVALID` before anything is
//! read. [`Partitions::on`] runs on another database (an app's pool:
//! `Partitions::on(PgPartitions::new(pool))`).
//!
//! # Locks
//!
//! Creating or dropping a partition locks its parent table against writers. Every DDL
//! statement runs in a transaction of its own under `lock_timeout`
//! ([`DEFAULT_PARTITIONS_LOCK_TIMEOUT`], 5 s, or [`Partitions::lock_timeout`]): a statement
//! that would wait longer gives up with `X_DB_LOCK_TIMEOUT`, which is retryable, so writers
//! queue behind it at most that long and the attempt tries again with backoff. What a failed
//! step already created stays; its retry creates only what is still missing.

mod table;

pub use table::{PartitionedTable, Period, Plan, DEFAULT_PARTITIONS_AHEAD};

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::driver::partition_store::PartitionStore;
use crate::error::{ErrorCode, JobError};
use crate::run::Run;

/// The partitions task's default schedule: 03:17 every day (off the hour, in UTC unless the
/// declaration names a zone).
pub const DEFAULT_PARTITIONS_CRON: &str = "17 3 * * *";

/// How long one DDL statement waits for its locks unless told.
pub const DEFAULT_PARTITIONS_LOCK_TIMEOUT: Duration = Duration::from_secs(5);

/// The durable step that holds a run's one clock reading.
pub const PARTITIONS_CLOCK_STEP: &str = "partitions:now";

/// What the partitions job is enqueued with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PartitionsRequest {
    /// Create every partition back to the period holding this day (UTC), and drop nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<NaiveDate>,
}

impl PartitionsRequest {
    /// A run that creates partitions back to `from` and drops none.
    pub fn from(from: NaiveDate) -> Self {
        PartitionsRequest { from: Some(from) }
    }

    /// [`PartitionsRequest::from`] a day written `YYYY-MM-DD`; another shape is
    /// `X_INVARIANT`.
    ///
    /// ```
    /// let back = jobs::partitions::PartitionsRequest::since("2024-01-01").unwrap();
    /// assert_eq!(back.from.unwrap().to_string(), "2024-01-01");
    /// assert!(jobs::partitions::PartitionsRequest::since("01/01/2024").is_err());
    /// ```
    pub fn since(day: &str) -> Result<Self, JobError> {
        NaiveDate::parse_from_str(day, "%Y-%m-%d")
            .map(Self::from)
            .map_err(|_| {
                JobError::new(
                    ErrorCode::Invariant,
                    "a partitions run's `from` is not a day written YYYY-MM-DD",
                )
                .with_fix("write the day as `2024-01-01`")
            })
    }
}

/// What one run did to each table, in declaration order (kept as the job's result).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PartitionsReport {
    /// The run's one clock reading.
    pub now: Timestamp,
    /// Per table.
    pub tables: Vec<TableReport>,
}

/// What one run did to one table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TableReport {
    /// The table.
    pub table: String,
    /// The partitions it created, oldest first.
    pub created: Vec<String>,
    /// The partitions it dropped, oldest first.
    pub dropped: Vec<String>,
}

/// The tables of one partitions run, and where their DDL runs. See the [module docs](self).
#[derive(Clone, Default)]
pub struct Partitions {
    tables: Vec<PartitionedTable>,
    store: Option<Arc<dyn PartitionStore>>,
    lock_timeout: Option<Duration>,
}

impl std::fmt::Debug for Partitions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partitions")
            .field("tables", &self.tables)
            .field("own_store", &self.store.is_some())
            .field("lock_timeout", &self.lock_timeout)
            .finish()
    }
}

impl Partitions {
    /// No tables yet, on the run's own store.
    pub fn new() -> Self {
        Self::default()
    }

    /// No tables yet, on `store` (an app's database: `PgPartitions::new(pool)`).
    pub fn on(store: impl PartitionStore + 'static) -> Self {
        Partitions {
            store: Some(Arc::new(store)),
            ..Self::default()
        }
    }

    /// Adds a table.
    pub fn table(mut self, table: PartitionedTable) -> Self {
        self.tables.push(table);
        self
    }

    /// How long one DDL statement waits for its locks ([`DEFAULT_PARTITIONS_LOCK_TIMEOUT`]).
    pub fn lock_timeout(mut self, timeout: Duration) -> Self {
        self.lock_timeout = Some(timeout);
        self
    }

    /// Runs inside `run`: refuses a bad set of tables or a store without partitions before
    /// anything else, reads the clock once (durably), then keeps each table in its own durable
    /// step (`partitions:<table>`).
    pub async fn run(
        self,
        run: &Run,
        request: &PartitionsRequest,
    ) -> Result<PartitionsReport, JobError> {
        check_tables(run.job_name(), &self.tables)?;
        let own;
        let store: &dyn PartitionStore = match &self.store {
            Some(store) => store.as_ref(),
            None => {
                own = run.driver().partition_store();
                own.ok_or_else(|| {
                    JobError::new(
                        ErrorCode::JobDeclarationInvalid,
                        format!(
                            "partitions job `{}`: the {} store has no declarative partitions",
                            run.job_name(),
                            run.driver().name()
                        ),
                    )
                    .with_fix(
                        "run it on a Postgres store, or give it the app's Postgres pool: \
                         `Partitions::on(PgPartitions::new(pool))`",
                    )
                })?
            }
        };
        let lock_timeout = self.lock_timeout.unwrap_or(DEFAULT_PARTITIONS_LOCK_TIMEOUT);
        let now: Timestamp = run
            .step(PARTITIONS_CLOCK_STEP, async {
                Ok::<_, JobError>(run.now())
            })
            .await?;
        let today = now.date_naive();
        let mut report = PartitionsReport {
            now,
            tables: Vec::with_capacity(self.tables.len()),
        };
        for table in &self.tables {
            let step = format!("partitions:{}", table.table());
            let done: TableReport = run
                .step(&step, keep(store, table, today, request.from, lock_timeout))
                .await?;
            tracing::info!(
                target: "jobs.partitions.table",
                job = run.job_name(),
                table = table.table(),
                created = done.created.len(),
                dropped = done.dropped.len(),
                "partitions kept"
            );
            report.tables.push(done);
        }
        Ok(report)
    }
}

/// One table: read its partitions, then create and drop what the plan says, one statement at
/// a time.
async fn keep(
    store: &dyn PartitionStore,
    table: &PartitionedTable,
    today: NaiveDate,
    from: Option<NaiveDate>,
    lock_timeout: Duration,
) -> Result<TableReport, JobError> {
    let existing = store.partitions_of(table.table()).await?;
    let plan = table.plan(today, from, &existing);
    let mut report = TableReport {
        table: table.table().to_string(),
        created: Vec::new(),
        dropped: Vec::new(),
    };
    for partition in &plan.create {
        if store
            .partition_create(table.table(), partition, lock_timeout)
            .await?
        {
            report.created.push(partition.name.clone());
        }
    }
    for name in &plan.drop {
        if store
            .partition_drop(table.table(), name, lock_timeout)
            .await?
        {
            report.dropped.push(name.clone());
        }
    }
    Ok(report)
}

/// Each table once, each one a run could keep, before any DDL.
fn check_tables(job: &str, tables: &[PartitionedTable]) -> Result<(), JobError> {
    let mut seen = HashSet::new();
    for table in tables {
        table.check()?;
        if !seen.insert(table.table()) {
            return Err(JobError::new(
                ErrorCode::JobDeclarationInvalid,
                format!(
                    "partitions job `{job}` names table `{}` twice; nothing was changed",
                    table.table()
                ),
            )
            .with_fix("name each table once"));
        }
    }
    Ok(())
}
