//! The one way every driver names the operation a failure happened in: [`Operation`].
//!
//! A driver's error says which port operation failed (`postgres \`job_claim\` failed: ..`),
//! never with what values; the name is the port method's, or the statement file's where a
//! method runs several. A driver outside this crate names its failures with the same enum.

use std::fmt;

use crate::error::ErrorCode;

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
    /// `backfill_begin`
    BackfillBegin,
    /// `backfill_begin commit`
    BackfillBeginCommit,
    /// `backfill_finish`
    BackfillFinish,
    /// `backfill_list`
    BackfillList,
    /// `backfill_lock`
    BackfillLock,
    /// `backfill_progress`
    BackfillProgress,
    /// `connect`
    Connect,
    /// `decode backfill row`
    DecodeBackfillRow,
    /// `decode event row`
    DecodeEventRow,
    /// `decode job row`
    DecodeJobRow,
    /// `decode job summary`
    DecodeJobSummary,
    /// `decode lease row`
    DecodeLeaseRow,
    /// `decode ledger line`
    DecodeLedgerLine,
    /// `decode step row`
    DecodeStepRow,
    /// `event_find`
    EventFind,
    /// `event_mark`
    EventMark,
    /// `event_publish`
    EventPublish,
    /// `event_purge`
    EventPurge,
    /// `history_append`
    HistoryAppend,
    /// `history_purge`
    HistoryPurge,
    /// `introspect_counter_totals`
    IntrospectCounterTotals,
    /// `introspect_counters`
    IntrospectCounters,
    /// `introspect_counters_rollup`
    IntrospectCountersRollup,
    /// `introspect_job_history`
    IntrospectJobHistory,
    /// `introspect_job_list`
    IntrospectJobList,
    /// `introspect_job_promote`
    IntrospectJobPromote,
    /// `introspect_job_promote_many`
    IntrospectJobPromoteMany,
    /// `introspect_job_remove`
    IntrospectJobRemove,
    /// `introspect_job_remove_many`
    IntrospectJobRemoveMany,
    /// `introspect_job_requeue`
    IntrospectJobRequeue,
    /// `introspect_job_requeue_many`
    IntrospectJobRequeueMany,
    /// `introspect_queue_pause`
    IntrospectQueuePause,
    /// `introspect_queue_paused`
    IntrospectQueuePaused,
    /// `introspect_queue_resume`
    IntrospectQueueResume,
    /// `introspect_worker_announce`
    IntrospectWorkerAnnounce,
    /// `introspect_worker_forget`
    IntrospectWorkerForget,
    /// `introspect_worker_list`
    IntrospectWorkerList,
    /// `job_ack`
    JobAck,
    /// `job_ack_many`
    JobAckMany,
    /// `job_cancel`
    JobCancel,
    /// `job_claim`
    JobClaim,
    /// `job_enqueue`
    JobEnqueue,
    /// `job_enqueue_many`
    JobEnqueueMany,
    /// `job_get`
    JobGet,
    /// `job_heartbeat`
    JobHeartbeat,
    /// `job_nack`
    JobNack,
    /// `job_progress`
    JobProgress,
    /// `job_purge`
    JobPurge,
    /// `lease_acquire`
    LeaseAcquire,
    /// `lease_holders`
    LeaseHolders,
    /// `lease_release`
    LeaseRelease,
    /// `lease_renew`
    LeaseRenew,
    /// `ledger_insert`
    LedgerInsert,
    /// `ledger_insert commit`
    LedgerInsertCommit,
    /// `ledger_insert rollback`
    LedgerInsertRollback,
    /// `ledger_lines`
    LedgerLines,
    /// `migrate`
    Migrate,
    /// `migrate apply`
    MigrateApply,
    /// `migrate bootstrap`
    MigrateBootstrap,
    /// `migrate commit`
    MigrateCommit,
    /// `migrate lock`
    MigrateLock,
    /// `migrate read`
    MigrateRead,
    /// `migrate record`
    MigrateRecord,
    /// `queue_stats`
    QueueStats,
    /// `scheduler_lead`
    SchedulerLead,
    /// `scheduler_leader`
    SchedulerLeader,
    /// `scheduler_resign`
    SchedulerResign,
    /// `step_list`
    StepList,
    /// `step_put`
    StepPut,
    /// `task_fire`
    TaskFire,
    /// `task_fires`
    TaskFires,
    /// `task_pause`
    TaskPause,
    /// `task_paused`
    TaskPaused,
    /// `task_resume`
    TaskResume,
    /// `task_watermarks`
    TaskWatermarks,
    /// `wake_listen`
    WakeListen,
    /// `webhook_attempts`
    WebhookAttempts,
    /// `webhook_attempts_purge`
    WebhookAttemptsPurge,
    /// `webhook_disable`
    WebhookDisable,
    /// `webhook_enable`
    WebhookEnable,
    /// `webhook_record`
    WebhookRecord,
    /// `webhook_standing`
    WebhookStanding,
    /// `writer`
    Writer,
}

impl Operation {
    /// The operation as a message names it (the port method's name, or the statement file's
    /// where a method runs several).
    pub fn name(self) -> &'static str {
        match self {
            Operation::BackfillBegin => "backfill_begin",
            Operation::BackfillBeginCommit => "backfill_begin commit",
            Operation::BackfillFinish => "backfill_finish",
            Operation::BackfillList => "backfill_list",
            Operation::BackfillLock => "backfill_lock",
            Operation::BackfillProgress => "backfill_progress",
            Operation::Connect => "connect",
            Operation::DecodeBackfillRow => "decode backfill row",
            Operation::DecodeEventRow => "decode event row",
            Operation::DecodeJobRow => "decode job row",
            Operation::DecodeJobSummary => "decode job summary",
            Operation::DecodeLeaseRow => "decode lease row",
            Operation::DecodeLedgerLine => "decode ledger line",
            Operation::DecodeStepRow => "decode step row",
            Operation::EventFind => "event_find",
            Operation::EventMark => "event_mark",
            Operation::EventPublish => "event_publish",
            Operation::EventPurge => "event_purge",
            Operation::HistoryAppend => "history_append",
            Operation::HistoryPurge => "history_purge",
            Operation::IntrospectCounterTotals => "introspect_counter_totals",
            Operation::IntrospectCounters => "introspect_counters",
            Operation::IntrospectCountersRollup => "introspect_counters_rollup",
            Operation::IntrospectJobHistory => "introspect_job_history",
            Operation::IntrospectJobList => "introspect_job_list",
            Operation::IntrospectJobPromote => "introspect_job_promote",
            Operation::IntrospectJobPromoteMany => "introspect_job_promote_many",
            Operation::IntrospectJobRemove => "introspect_job_remove",
            Operation::IntrospectJobRemoveMany => "introspect_job_remove_many",
            Operation::IntrospectJobRequeue => "introspect_job_requeue",
            Operation::IntrospectJobRequeueMany => "introspect_job_requeue_many",
            Operation::IntrospectQueuePause => "introspect_queue_pause",
            Operation::IntrospectQueuePaused => "introspect_queue_paused",
            Operation::IntrospectQueueResume => "introspect_queue_resume",
            Operation::IntrospectWorkerAnnounce => "introspect_worker_announce",
            Operation::IntrospectWorkerForget => "introspect_worker_forget",
            Operation::IntrospectWorkerList => "introspect_worker_list",
            Operation::JobAck => "job_ack",
            Operation::JobAckMany => "job_ack_many",
            Operation::JobCancel => "job_cancel",
            Operation::JobClaim => "job_claim",
            Operation::JobEnqueue => "job_enqueue",
            Operation::JobEnqueueMany => "job_enqueue_many",
            Operation::JobGet => "job_get",
            Operation::JobHeartbeat => "job_heartbeat",
            Operation::JobNack => "job_nack",
            Operation::JobProgress => "job_progress",
            Operation::JobPurge => "job_purge",
            Operation::LeaseAcquire => "lease_acquire",
            Operation::LeaseHolders => "lease_holders",
            Operation::LeaseRelease => "lease_release",
            Operation::LeaseRenew => "lease_renew",
            Operation::LedgerInsert => "ledger_insert",
            Operation::LedgerInsertCommit => "ledger_insert commit",
            Operation::LedgerInsertRollback => "ledger_insert rollback",
            Operation::LedgerLines => "ledger_lines",
            Operation::Migrate => "migrate",
            Operation::MigrateApply => "migrate apply",
            Operation::MigrateBootstrap => "migrate bootstrap",
            Operation::MigrateCommit => "migrate commit",
            Operation::MigrateLock => "migrate lock",
            Operation::MigrateRead => "migrate read",
            Operation::MigrateRecord => "migrate record",
            Operation::QueueStats => "queue_stats",
            Operation::SchedulerLead => "scheduler_lead",
            Operation::SchedulerLeader => "scheduler_leader",
            Operation::SchedulerResign => "scheduler_resign",
            Operation::StepList => "step_list",
            Operation::StepPut => "step_put",
            Operation::TaskFire => "task_fire",
            Operation::TaskFires => "task_fires",
            Operation::TaskPause => "task_pause",
            Operation::TaskPaused => "task_paused",
            Operation::TaskResume => "task_resume",
            Operation::TaskWatermarks => "task_watermarks",
            Operation::WakeListen => "wake_listen",
            Operation::WebhookAttempts => "webhook_attempts",
            Operation::WebhookAttemptsPurge => "webhook_attempts_purge",
            Operation::WebhookDisable => "webhook_disable",
            Operation::WebhookEnable => "webhook_enable",
            Operation::WebhookRecord => "webhook_record",
            Operation::WebhookStanding => "webhook_standing",
            Operation::Writer => "writer",
        }
    }

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
