//! The names of the span fields the runtime records: OpenTelemetry's messaging semantic
//! conventions, beside the runtime's own `jobs.*` attributes.
//!
//! A span never carries a job's input, its idempotency key, its tenant or an event payload:
//! only names, ids, counts and codes.

/// `messaging.system`: always [`SYSTEM`].
pub const MESSAGING_SYSTEM: &str = "messaging.system";
/// `messaging.operation.type`: [`OPERATION_SEND`] on enqueue, [`OPERATION_PROCESS`] on a run.
pub const MESSAGING_OPERATION_TYPE: &str = "messaging.operation.type";
/// `messaging.destination.name`: the queue.
pub const MESSAGING_DESTINATION_NAME: &str = "messaging.destination.name";
/// `messaging.message.id`: the job's id.
pub const MESSAGING_MESSAGE_ID: &str = "messaging.message.id";
/// `messaging.batch.message_count`: how many jobs one `enqueue_many` sent.
pub const MESSAGING_BATCH_MESSAGE_COUNT: &str = "messaging.batch.message_count";

/// The value of `messaging.system`.
pub const SYSTEM: &str = "jobs";
/// The producer's operation.
pub const OPERATION_SEND: &str = "send";
/// The consumer's operation.
pub const OPERATION_PROCESS: &str = "process";

/// `jobs.job.name`: the job's declared name.
pub const JOB_NAME: &str = "jobs.job.name";
/// `jobs.run.id`: the run's id, stable across attempts.
pub const RUN_ID: &str = "jobs.run.id";
/// `jobs.attempt`: the attempt's number, from 1.
pub const ATTEMPT: &str = "jobs.attempt";
/// `jobs.max_attempts`: attempts allowed.
pub const MAX_ATTEMPTS: &str = "jobs.max_attempts";
/// `jobs.outcome`: how the attempt ended ([`crate::ExecutionOutcome`], snake case).
pub const OUTCOME: &str = "jobs.outcome";
/// `jobs.error.code`: the failure's `X_...` code, when it has one.
pub const ERROR_CODE: &str = "jobs.error.code";
/// `jobs.deduped`: the enqueue answered a live job that already held the key.
pub const DEDUPED: &str = "jobs.deduped";
/// `jobs.actor`: who asked for the job ([`EnqueueOptions::actor`](crate::EnqueueOptions::actor)),
/// on the enqueue's span and every run's, when the enqueue named one.
pub const ACTOR: &str = "jobs.actor";
/// `jobs.step.name`: the step's name.
pub const STEP_NAME: &str = "jobs.step.name";
/// `jobs.step.attempt`: how many times this step's closure has run, this one included.
pub const STEP_ATTEMPT: &str = "jobs.step.attempt";
/// `jobs.step.status`: `ok` or `error`.
pub const STEP_STATUS: &str = "jobs.step.status";

/// `trace_id`: the span's trace (32 hex digits), the same from the enqueue to every run.
pub const TRACE_ID: &str = "trace_id";
/// `span_id`: the span's own id (16 hex digits).
pub const SPAN_ID: &str = "span_id";
/// `parent_id`: the parent span's id (the enqueue's, for a run), when it has one.
pub const PARENT_ID: &str = "parent_id";
/// `traceparent`: the value stored on the job (producer) or read from it (consumer).
pub const TRACEPARENT: &str = "traceparent";

/// `otel.name`: the span's name for an OpenTelemetry exporter (`job.<name>.enqueue`,
/// `job.<name>`, `job.<name>.step`), since a `tracing` span name is static.
pub const OTEL_NAME: &str = "otel.name";
/// `otel.kind`: `producer` for an enqueue, `consumer` for a run and its steps.
pub const OTEL_KIND: &str = "otel.kind";
