//! The storage port: [`JobDriver`] and its optional sub-ports, with the records they exchange.
//! Every driver (memory, Postgres, SQLite, and any outside this crate) implements it; the worker,
//! the client and the test kit only ever talk to these traits. The port names no driver's types:
//! each driver brings its own connection types, row decoding and URL schemes.
//!
//! Methods read entity then verb (`job_enqueue`, `job_claim`, `step_put`, `event_publish`) and
//! take one params struct each, carrying `now` from the injected clock, so a driver never reads
//! the wall clock and a new field never touches the other operations.
//!
//! Settling writes (ack, nack, heartbeat, progress, step writes) are fenced on the claim: the
//! row must still be `running` under the same worker and claim ordinal, otherwise the write
//! lands nowhere and the method answers `false`.
//!
//! # Writing a driver
//!
//! A driver outside this crate implements [`JobDriver`] (and whichever sub-ports its store can
//! keep) against these items alone, and applies the rules every built-in driver shares rather
//! than re-expressing them:
//!
//! - the operator surface's bounds, pages and refusals: [`introspect::check_list`],
//!   [`introspect::page_of`], [`introspect::check_bulk_state`], [`introspect::check_history`],
//!   [`introspect::refusal`], [`introspect::not_found`], [`introspect::duplicate`],
//!   [`introspect::unknown_step`], and the keyset cursor [`introspect::JobCursor`];
//! - the claim: the tenant turn order [`fair_cursor_after`], and
//!   [`ClaimedJob::from_claimed_row`] for the job a claim hands the worker;
//! - the refusals of the other ports: [`EnqueueResult::held`] and
//!   [`EnqueueResult::key_kept_moving`] for a held key, [`ledger_book::posting_conflict`],
//!   [`caller_tx::foreign_connection`];
//! - [`Operation`] to name the operation a failure happened in;
//! - [`url::DriverScheme`](crate::driver::url::DriverScheme) with
//!   [`register_driver_scheme!`](crate::register_driver_scheme) to be opened by URL.
//!
//! It passes when `jobs::conformance_suite!` (feature `conformance`) passes against it, as the
//! built-in drivers do. `examples/src/outside_driver.rs` in this repository is such a driver, in
//! a crate of its own, run against the whole suite.

pub mod backfill_store;
pub mod caller_tx;
pub mod introspect;
pub mod lease;
pub mod ledger_book;
mod operation;
pub mod outbox;
pub mod partition_store;
pub(crate) mod records;
pub mod scheduler_store;
pub mod webhook_ledger;

pub use backfill_store::BackfillStore;
pub use caller_tx::{CallerConnection, CallerTransaction};
pub use introspect::JobIntrospection;
pub use ledger_book::LedgerBook;
pub use operation::Operation;
pub use outbox::OutboxStore;
pub use records::*;
pub use scheduler_store::{SchedulerLeader, SchedulerStore};
pub use webhook_ledger::WebhookLedger;

use async_trait::async_trait;

/// What a push wake reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WakeSignal {
    /// Due jobs arrived on this queue.
    Queue(String),
    /// A job of this queue becomes due at `at` (a delayed enqueue, a retry after its backoff,
    /// a parked run's wake-up): an idle worker serving the queue arms a timer for it, so it
    /// starts when due rather than at that worker's next poll.
    Due {
        /// The queue.
        queue: String,
        /// When the job becomes due.
        at: crate::clock::Timestamp,
    },
    /// A probe came back: wakes are being delivered.
    Live,
    /// The session was lost: wakes may be missed until it is proven again.
    Lost,
}

/// The receiving end of a push wake.
pub type WakeReceiver = tokio::sync::mpsc::Receiver<WakeSignal>;

use crate::error::JobError;

/// The one storage port: queue, steps and events live behind it, so that one store is one
/// transaction boundary.
#[async_trait]
pub trait JobDriver: Send + Sync + 'static {
    /// A short name for logs (`memory`, `postgres`).
    fn name(&self) -> &'static str;

    /// The lease store, when the driver has one: fleet-wide concurrency caps and `with_lock`
    /// need it (a worker refuses to start a job declaring `concurrency` without it).
    fn lease_store(&self) -> Option<&dyn lease::LeaseStore> {
        None
    }

    /// The scheduler's storage (leader lease, task watermarks, pauses, fires), when the driver
    /// has one: a scheduler needs it.
    fn scheduler_store(&self) -> Option<&dyn SchedulerStore> {
        None
    }

    /// The operator surface (list, requeue, remove, promote, queue pauses, workers, counters),
    /// when the driver has one: without it every operator verb answers `X_NOT_IMPLEMENTED`.
    fn introspect(&self) -> Option<&dyn JobIntrospection> {
        None
    }

    /// The ledger of backfill passes, when the driver has one. Without it a `#[backfill]`
    /// still runs its pass, unrecorded.
    fn backfill_store(&self) -> Option<&dyn BackfillStore> {
        None
    }

    /// The driver's own double-entry book (`#[ledger(book = driver)]` writes here), when it
    /// has one.
    fn ledger_book(&self) -> Option<&dyn LedgerBook> {
        None
    }

    /// The webhook endpoint ledger (every delivery attempt, failure runs, disabled
    /// endpoints), when the driver has one: a `#[webhook]` job records its attempts here.
    fn webhook_ledger(&self) -> Option<&dyn WebhookLedger> {
        None
    }

    /// The partitions of the app's range-partitioned tables in the store's own database,
    /// when it has declarative partitions (Postgres): the partitions job keeps them ready.
    fn partition_store(&self) -> Option<&dyn partition_store::PartitionStore> {
        None
    }

    /// Enqueue and publish inside a caller's own transaction, when the driver can join one
    /// (Postgres can; memory cannot, and answers `X_DRIVER_UNAVAILABLE` through `Jobs`).
    fn caller_transaction(&self) -> Option<&dyn CallerTransaction> {
        None
    }

    /// Creates or upgrades the driver's storage (idempotent, safe from several processes);
    /// answers the migration versions it applied. A store with nothing to migrate (memory)
    /// answers none.
    async fn migrate(&self) -> Result<Vec<i32>, JobError> {
        Ok(Vec::new())
    }

    /// What `jobs verify` reads of the store: the migrations it lacks and its persistence
    /// settings (nothing is written). A driver that cannot tell answers `X_NOT_IMPLEMENTED`.
    async fn store_check(&self) -> Result<StoreCheck, JobError> {
        Err(JobError::new(
            crate::error::ErrorCode::NotImplemented,
            format!(
                "the `{}` driver cannot report its migrations and persistence",
                self.name()
            ),
        ))
    }

    /// Inserts a job, or answers the live job that already holds the idempotency key with
    /// `deduped = true` and inserts nothing.
    async fn job_enqueue(&self, request: &EnqueueRequest) -> Result<EnqueueResult, JobError>;

    /// Inserts many jobs; each answers as [`JobDriver::job_enqueue`] would. All of them or
    /// none.
    ///
    /// The batch is stored at one `now`, the latest of its requests' `now`: a job whose
    /// `run_at` is at or before it is `ready`, a later one `delayed`, and every row's
    /// `created_at` is it. (The default implementation enqueues one by one, each at its own
    /// `now`; a driver overriding it keeps the rule above.)
    async fn job_enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        let mut out = Vec::with_capacity(requests.len());
        for request in requests {
            out.push(self.job_enqueue(request).await?);
        }
        Ok(out)
    }

    /// Claims up to each queue's demand of due jobs, oldest `run_at` first, making them
    /// invisible until `now + visibility_timeout`. A `running` row whose lease lapsed is
    /// claimed again, unless it already used its last attempt: then it is buried (`dead`, or
    /// `failed` for the names in `drop_exhausted`) with `LEASE_LAPSED_FINAL_ATTEMPT` and
    /// reported in [`ClaimResult::exhausted`].
    async fn job_claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError>;

    /// Settles a running job `done`, clearing `last_error` and `last_error_code` (an earlier
    /// attempt's failure is no error of a completed job) and storing
    /// [`AckParams::result`] as [`JobRecord::result`] in the same write. Fenced: `false` when
    /// the claim no longer holds the row, and then no result is stored either.
    async fn job_ack(&self, params: &AckParams) -> Result<bool, JobError>;

    /// Settles many running jobs `done` at once, each fenced on its own claim and storing its
    /// own result as [`JobDriver::job_ack`] does; answers, in order, whether each landed. The worker's completer batches its acks through it.
    async fn job_ack_many(&self, params: &[AckParams]) -> Result<Vec<bool>, JobError> {
        let mut landed = Vec::with_capacity(params.len());
        for p in params {
            landed.push(self.job_ack(p).await?);
        }
        Ok(landed)
    }

    /// Whether the worker should gather acks into [`JobDriver::job_ack_many`] batches (a
    /// round trip saved per job on a store across a network). An in-process store answers
    /// `false`: its acks cost no round trip, and a hand-off to a batching task would cost two
    /// task wake-ups per job.
    fn batches_acks(&self) -> bool {
        true
    }

    /// Whether the worker, before each claim, lets its runnable attempts take a turn first, so
    /// one claim fills every slot they free. A store a round trip or a thread hop away wants
    /// it: a claim of 16 rows costs about what one of 8 does (Postgres, no-op jobs, 16 slots:
    /// 9,100 jobs/s without, 12,400 with). An in-process store does not: its claims are cheap,
    /// and the extra turn costs more than it saves (the memory driver ran at 0.82x with it).
    /// That is the same distinction as [`JobDriver::batches_acks`], which it follows unless a
    /// driver says otherwise.
    fn gathers_claims(&self) -> bool {
        self.batches_acks()
    }

    /// Settles a running job into the state [`NackParams::target`] names. Fenced.
    async fn job_nack(&self, params: &NackParams) -> Result<bool, JobError>;

    /// Deletes one batch of finished rows past their retention window (and their runs' steps);
    /// answers how many rows went. Live rows are never touched. The same transaction deletes up
    /// to `limit` history rows of jobs no longer stored that were written before the later of
    /// the two cutoffs: every row of the jobs this batch deleted, and a removed job's rows once
    /// they are that old.
    async fn job_purge(&self, params: &JobPurgeParams) -> Result<u64, JobError>;

    /// Extends a running job's invisibility. `false`: the run no longer holds the row
    /// (cancelled, or re-claimed after its lease lapsed); stop the run.
    async fn job_heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError>;

    /// Records a running job's progress. Fenced.
    async fn job_progress(&self, params: &ProgressParams) -> Result<bool, JobError>;

    /// Reads one job.
    async fn job_get(&self, params: &JobGetParams) -> Result<Option<JobRecord>, JobError>;

    /// Judges the dependents of settled jobs whose judging was left unfinished (a process died
    /// between a settle and the release pass that follows it), as of `now`. A worker calls it
    /// when it starts and about once a minute ([`RELEASE_SWEEP_EVERY`]). Default: nothing is
    /// ever left, as on a driver whose settles judge dependents in the same write.
    async fn job_release_pending(&self, now: crate::clock::Timestamp) -> Result<(), JobError> {
        let _ = now;
        Ok(())
    }

    /// Reads a job's links to other jobs: the jobs it depends on with their states, the jobs
    /// depending on it, and its policy ([`JobLinks`]). An unknown job has none.
    async fn job_links(&self, id: JobId) -> Result<JobLinks, JobError>;

    /// Adds members to a group ([`GroupJoinParams`]), creating it on its first join: members
    /// already settled count at once, the rest when they stop being live; once `settled`
    /// reaches `need` the group is done and its waiter, if `suspended` or `delayed`, is made
    /// `ready` and due at `now` (once). Idempotent for members already in. Answers the group
    /// after the join.
    async fn job_group_join(&self, params: &GroupJoinParams<'_>) -> Result<GroupRecord, JobError>;

    /// Reads a group.
    async fn job_group_get(&self, group: GroupId) -> Result<Option<GroupRecord>, JobError>;

    /// A page of a group's members in join order, each with its state, result and last error.
    async fn job_group_members(
        &self,
        params: &GroupMembersParams,
    ) -> Result<Vec<GroupMember>, JobError>;

    /// If the group is done and its waiter is `suspended` or `delayed`, makes it `ready`, due at
    /// `now`; answers the group. A parent calls it right after it parks on the group, so a
    /// group done while the parent was still running wakes it all the same; it is atomic with
    /// the counting (a member's settle either sees the parent parked or is seen by this).
    async fn job_group_wake(
        &self,
        params: &GroupWakeParams,
    ) -> Result<Option<GroupRecord>, JobError>;

    /// Cancels a live job: a queued one at once, a running one at its next heartbeat; its live
    /// children (the jobs it invoked, [`GroupJoinParams::parent`]) are cancelled with it, and
    /// theirs. The same transaction appends `cancel` (with [`JobCancelParams::actor`]) to the
    /// job's history ([`introspect::JobIntrospection::job_history`]). `X_JOB_NOT_CANCELLABLE`
    /// for a finished or unknown job.
    async fn job_cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError>;

    /// Counts per queue.
    async fn queue_stats(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError>;

    /// Each queue's depth for the dashboard's overview: [`JobDriver::queue_stats`] with `done`
    /// left at 0, so a store may answer it without counting its done rows (the bulk of a jobs
    /// table); done work is read from the counters instead. Default: `queue_stats` with `done`
    /// cleared.
    async fn queue_depth(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        let mut stats = self.queue_stats(params).await?;
        for queue in &mut stats {
            queue.done = 0;
        }
        // A queue that held only done rows has no depth.
        stats.retain(|q| {
            *q != QueueStats {
                queue: q.queue.clone(),
                ..QueueStats::default()
            }
        });
        Ok(stats)
    }

    /// Every step record of a run (one read per attempt; replays are served from memory).
    async fn step_list(&self, params: &StepListParams) -> Result<Vec<StepRecord>, JobError>;

    /// Writes a step record, only while `fence` still holds the row. `false` otherwise.
    async fn step_put(&self, params: &StepPutParams<'_>) -> Result<bool, JobError>;

    /// Stores an event and wakes the runs parked waiting for it.
    async fn event_publish(&self, event: &EventPublish) -> Result<EventId, JobError>;

    /// Deletes one batch of events expired at `now` (oldest expiry first), which no wait can
    /// match any more; answers how many went. Live events are never touched.
    async fn event_purge(&self, params: &EventPurgeParams) -> Result<u64, JobError>;

    /// The mark a new wait records: events stored after it belong to the wait.
    async fn event_mark(&self) -> Result<String, JobError>;

    /// A push wake, when the driver has one: it reports the queues that received due jobs,
    /// the due times written for later (a delayed enqueue, a retry, a park: [`WakeSignal::Due`]),
    /// and whether the wake is proven live. `None`: the poll is all there is (the memory
    /// driver's in-process wake lives in [`Jobs`](crate::Jobs) itself).
    async fn wake_listen(&self) -> Result<Option<WakeReceiver>, JobError> {
        Ok(None)
    }

    /// Each queue's next due time: the earliest `run_at` after `now` among its rows waiting
    /// for their time (delayed, ready and backing off, suspended), one [`QueueDue`] per queue
    /// that has one. A worker reads it when it starts and when its push wake comes back, and
    /// arms its due timer with the answers: a due time announced while it was not listening
    /// (a job delayed by another client, a retry, a parked run) then starts when due, not at
    /// its next poll. A read, never a write; it may answer an approximation as long as it
    /// never answers a time later than a queue's earliest (a store that walks a bounded
    /// number of tenants, [`NEXT_DUE_TENANTS`], answers the earliest among them).
    ///
    /// Default: none, so a driver without it keeps compiling and its workers find such times
    /// at their next poll.
    async fn queue_next_due(&self, params: &NextDueParams) -> Result<Vec<QueueDue>, JobError> {
        let _ = params;
        Ok(Vec::new())
    }

    /// The first unexpired (at `now`) event named `name` under `key` stored after `since`.
    async fn event_find(&self, params: &EventFindParams<'_>) -> Result<Option<JobEvent>, JobError>;
}
