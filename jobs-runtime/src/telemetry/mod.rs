//! Telemetry: `tracing` spans with OpenTelemetry messaging attributes, a W3C `traceparent`
//! carried on every job so one trace spans the enqueue and its runs, and a small metrics
//! registry rendered as Prometheus text.
//!
//! # Spans
//!
//! | span (`otel.name`)      | kind     | opened by                                   |
//! |-------------------------|----------|---------------------------------------------|
//! | `job.<name>.enqueue`    | producer | every `enqueue`, `enqueue_with`, `enqueue_many`, `enqueue_in` |
//! | `job.<name>`            | consumer | the worker, once per attempt                |
//! | `job.<name>.step`       | consumer | `run.step(..)`, once per closure that runs  |
//!
//! The producer span is a child of the ambient job context (an enqueue from inside a run or a
//! step), else a new root, and stamps ITS `traceparent` on the row, unless the caller gave one
//! with [`EnqueueOptions::traceparent`](crate::EnqueueOptions::traceparent): that one is stored
//! as given and becomes the producer span's parent. The run span reads the stored value and
//! records its trace id as `trace_id` and its span id as `parent_id`, so a collector joins the
//! enqueue and every run of the job into one trace. Each span carries
//! [`attributes`]: `messaging.system = "jobs"`, `messaging.operation.type`,
//! `messaging.destination.name` (the queue), `messaging.message.id` (the job id), and
//! `jobs.job.name`, `jobs.run.id`, `jobs.attempt`, `jobs.outcome`, and `jobs.actor` (who asked
//! for the job, when its enqueue named one)... Never an input, a key, a tenant or a payload.
//!
//! A `tracing` span name is static: the names above are the `otel.name` field, which
//! `tracing-opentelemetry` uses as the exported name (with `otel.kind` as the span kind).
//!
//! ```
//! use jobs::telemetry::TraceContext;
//!
//! // Outside of a run there is no ambient context; inside a job body, propagate
//! // `TraceContext::current()` on outgoing calls.
//! assert!(TraceContext::current().is_none());
//! ```
//!
//! # Metrics
//!
//! [`Metrics`] is fed by every worker of a [`Jobs`](crate::Jobs) (outcomes, lost leases) and
//! by `queue_stats` (depth, oldest ready age, dead jobs); [`Operator::metrics_text`](crate::Operator::metrics_text) refreshes the
//! gauges and renders the Prometheus exposition text, with the outbox's gauges
//! ([`OUTBOX_METRIC_NAMES`]) when the client has an outbox installed.

mod ambient;
pub mod attributes;
mod metrics;
mod spans;
mod traceparent;

pub(crate) use metrics::render_outbox;
#[cfg(feature = "dashboard")]
pub(crate) use metrics::{lease_claim_seconds, oldest_staged_seconds, outbox_gauges, OutboxGauge};
pub use metrics::{Metrics, METRIC_NAMES, OUTBOX_METRIC_NAMES};
pub use traceparent::TraceContext;

pub(crate) use spans::{step, EnqueueTrace, RunTrace};

use ambient::Ambient;

tokio::task_local! {
    /// The context of the run or step being polled: what an enqueue inside it descends from.
    static CURRENT: Ambient;
}

/// The ambient job context, when inside a run, a step or an enqueue's send.
pub(crate) fn current() -> Option<TraceContext> {
    CURRENT.try_with(Ambient::get).ok()
}
