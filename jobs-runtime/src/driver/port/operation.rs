//! The one way every driver names the operation a failure happened in: [`Operation`].
//!
//! A driver's error says which port operation failed (`postgres \`job_claim\` failed: ..`),
//! never with what values; the name is the port method's, or the statement file's where a
//! method runs several. A driver outside this crate names its failures with the same enum.

use std::fmt;

use crate::error::ErrorCode;

/// The operations and their names, once: the enum, each variant's doc and `name` come from it.
macro_rules! operations {
    ($($variant:ident => $name:literal,)*) => {
        /// A driver operation, as its failure names it.
        ///
        /// ```
        /// use jobs::driver::Operation;
        /// assert_eq!(Operation::JobClaim.name(), "job_claim");
        /// assert_eq!(Operation::JobClaim.to_string(), "job_claim");
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Operation {
            $(#[doc = concat!("`", $name, "`")] $variant,)*
        }

        impl Operation {
            /// The operation as a message names it (the port method's name, or the statement
            /// file's where a method runs several).
            pub fn name(self) -> &'static str {
                match self {
                    $(Operation::$variant => $name,)*
                }
            }
        }
    };
}

operations! {
    BackfillBegin => "backfill_begin",
    BackfillBeginCommit => "backfill_begin commit",
    BackfillFinish => "backfill_finish",
    BackfillList => "backfill_list",
    BackfillMigrationApplied => "backfill_migration_applied",
    BackfillLock => "backfill_lock",
    BackfillProgress => "backfill_progress",
    PartitionsOf => "partitions_of",
    PartitionCreate => "partition_create",
    PartitionDrop => "partition_drop",
    Connect => "connect",
    DecodeBackfillRow => "decode backfill row",
    DecodeEventRow => "decode event row",
    DecodeJobRow => "decode job row",
    DecodeJobSummary => "decode job summary",
    DecodeLeaseRow => "decode lease row",
    DecodeLedgerLine => "decode ledger line",
    DecodeStepRow => "decode step row",
    EventFind => "event_find",
    EventMark => "event_mark",
    EventPublish => "event_publish",
    EventPurge => "event_purge",
    HistoryAppend => "history_append",
    HistoryPurge => "history_purge",
    IntrospectCounterTotals => "introspect_counter_totals",
    IntrospectCounters => "introspect_counters",
    IntrospectCountersRollup => "introspect_counters_rollup",
    IntrospectJobHistory => "introspect_job_history",
    IntrospectJobList => "introspect_job_list",
    IntrospectJobPromote => "introspect_job_promote",
    IntrospectJobPromoteMany => "introspect_job_promote_many",
    IntrospectJobRemove => "introspect_job_remove",
    IntrospectJobRemoveMany => "introspect_job_remove_many",
    IntrospectJobRequeue => "introspect_job_requeue",
    IntrospectJobRequeueMany => "introspect_job_requeue_many",
    IntrospectQueuePause => "introspect_queue_pause",
    IntrospectQueuePaused => "introspect_queue_paused",
    IntrospectQueueResume => "introspect_queue_resume",
    IntrospectWorkerAnnounce => "introspect_worker_announce",
    IntrospectWorkerForget => "introspect_worker_forget",
    IntrospectWorkerList => "introspect_worker_list",
    JobAck => "job_ack",
    JobAckMany => "job_ack_many",
    JobCancel => "job_cancel",
    JobClaim => "job_claim",
    JobEnqueue => "job_enqueue",
    JobEnqueueMany => "job_enqueue_many",
    JobGet => "job_get",
    JobHeartbeat => "job_heartbeat",
    JobNack => "job_nack",
    JobProgress => "job_progress",
    JobPurge => "job_purge",
    JobRelease => "job_release",
    LeaseAcquire => "lease_acquire",
    LeaseHolders => "lease_holders",
    LeaseRelease => "lease_release",
    LeaseRenew => "lease_renew",
    LedgerInsert => "ledger_insert",
    LedgerInsertCommit => "ledger_insert commit",
    LedgerInsertRollback => "ledger_insert rollback",
    LedgerLines => "ledger_lines",
    Migrate => "migrate",
    MigrateApply => "migrate apply",
    MigrateBootstrap => "migrate bootstrap",
    MigrateCommit => "migrate commit",
    MigrateLock => "migrate lock",
    MigrateRead => "migrate read",
    MigrateRecord => "migrate record",
    OutboxClaim => "outbox_claim",
    OutboxInstall => "outbox_install",
    OutboxPublished => "outbox_published",
    OutboxPurge => "outbox_purge",
    OutboxRefused => "outbox_refused",
    OutboxRelease => "outbox_release",
    OutboxStage => "outbox_stage",
    OutboxStats => "outbox_stats",
    QueueNextDue => "queue_next_due",
    QueueStats => "queue_stats",
    SchedulerLead => "scheduler_lead",
    SchedulerLeader => "scheduler_leader",
    SchedulerResign => "scheduler_resign",
    StepList => "step_list",
    StepPut => "step_put",
    TaskFire => "task_fire",
    TaskFires => "task_fires",
    TaskPause => "task_pause",
    TaskPaused => "task_paused",
    TaskResume => "task_resume",
    TaskWatermarks => "task_watermarks",
    WakeListen => "wake_listen",
    WebhookAttempts => "webhook_attempts",
    WebhookAttemptsPurge => "webhook_attempts_purge",
    WebhookDisable => "webhook_disable",
    WebhookEnable => "webhook_enable",
    WebhookRecord => "webhook_record",
    WebhookStanding => "webhook_standing",
    Writer => "writer",
}

impl Operation {
    /// The code of the value this operation stores, for a value the store refuses: an input,
    /// a step's output, an event's payload.
    pub fn stored_value(self) -> Option<ErrorCode> {
        match self {
            Operation::JobEnqueue | Operation::JobEnqueueMany => Some(ErrorCode::JobInputInvalid),
            Operation::StepPut => Some(ErrorCode::StepOutputUnserializable),
            Operation::EventPublish => Some(ErrorCode::JobEventInvalid),
            _ => None,
        }
    }

    /// Whether it is a partitions job's DDL, whose lock waits are bounded by its
    /// `lock_timeout` (`X_DB_LOCK_TIMEOUT`).
    pub fn partitions(self) -> bool {
        matches!(
            self,
            Operation::PartitionsOf | Operation::PartitionCreate | Operation::PartitionDrop
        )
    }

    /// Whether it is part of applying the migrations (which create the tables themselves, so a
    /// missing table there is not a missing schema).
    pub fn migrates(self) -> bool {
        matches!(
            self,
            Operation::Migrate
                | Operation::MigrateLock
                | Operation::MigrateBootstrap
                | Operation::MigrateRead
                | Operation::MigrateApply
                | Operation::MigrateRecord
                | Operation::MigrateCommit
        )
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
