//! The three spans: producer (enqueue), consumer (run), and one per step.

use std::future::Future;
use std::sync::Arc;

use tracing::field::Empty;
use tracing::{Instrument, Span};

use super::attributes::{OPERATION_PROCESS, OPERATION_SEND, SYSTEM};
use super::{current, Ambient, TraceContext, CURRENT};
use crate::driver::{ClaimedJob, EnqueueRequest, EnqueueResult};
use crate::error::JobError;
use crate::execution::{ExecutionOutcome, JobExecution};

/// An enqueue's producer span, and the context it stamped on the rows it sends.
pub(crate) struct EnqueueTrace {
    span: Span,
    context: TraceContext,
}

impl EnqueueTrace {
    /// Opens `job.<name>.enqueue` for `requests` (one job, or one `enqueue_many` batch) and
    /// stamps its `traceparent` on every request that carries no valid one.
    pub(crate) fn start(requests: &mut [EnqueueRequest]) -> EnqueueTrace {
        let given = match requests {
            [one] => one.traceparent.as_deref().and_then(TraceContext::parse),
            _ => None,
        };
        let parent = given.or_else(current);
        let context = parent.map_or_else(TraceContext::new_root, |p| p.child());
        let stamp = context.to_traceparent();
        for request in requests.iter_mut() {
            let valid = request
                .traceparent
                .as_deref()
                .and_then(TraceContext::parse)
                .is_some();
            if !valid {
                request.traceparent = Some(stamp.clone());
            }
        }
        let (name, queue) = requests
            .first()
            .map_or(("", ""), |r| (r.name.as_str(), r.queue.as_str()));
        // A batch names its actor when every job of it names the same one.
        let actor = requests
            .first()
            .and_then(|r| r.actor.as_deref())
            .filter(|a| requests.iter().all(|r| r.actor.as_deref() == Some(*a)));
        let span = tracing::info_span!(
            "job.enqueue",
            otel.name = %format_args!("job.{name}.enqueue"),
            otel.kind = "producer",
            messaging.system = SYSTEM,
            messaging.operation.type = OPERATION_SEND,
            messaging.destination.name = %queue,
            messaging.message.id = Empty,
            messaging.batch.message_count = Empty,
            jobs.job.name = %name,
            jobs.run.id = Empty,
            jobs.deduped = Empty,
            jobs.error.code = Empty,
            jobs.actor = actor,
            trace_id = %context.trace_hex(),
            span_id = %context.span_hex(),
            parent_id = Empty,
            traceparent = %stamp,
        );
        if let Some(parent) = parent {
            span.record("parent_id", tracing::field::display(parent.span_hex()));
        }
        if requests.len() > 1 {
            span.record("messaging.batch.message_count", requests.len());
        }
        EnqueueTrace { span, context }
    }

    /// Runs one job's send inside the span; records the id it answered.
    pub(crate) async fn send(
        self,
        send: impl Future<Output = Result<EnqueueResult, JobError>>,
    ) -> Result<EnqueueResult, JobError> {
        let result = CURRENT
            .scope(
                Ambient::made(self.context),
                send.instrument(self.span.clone()),
            )
            .await;
        match &result {
            Ok(enqueued) => {
                self.span
                    .record("messaging.message.id", tracing::field::display(enqueued.id));
                self.span
                    .record("jobs.run.id", tracing::field::display(enqueued.run_id));
                self.span.record("jobs.deduped", enqueued.deduped);
            }
            Err(error) => self.record_error(error),
        }
        result
    }

    /// Runs a batch's send inside the span.
    pub(crate) async fn send_many(
        self,
        send: impl Future<Output = Result<Vec<EnqueueResult>, JobError>>,
    ) -> Result<Vec<EnqueueResult>, JobError> {
        let result = CURRENT
            .scope(
                Ambient::made(self.context),
                send.instrument(self.span.clone()),
            )
            .await;
        match &result {
            Ok(all) if all.len() == 1 => {
                self.span
                    .record("messaging.message.id", tracing::field::display(all[0].id));
                self.span
                    .record("jobs.run.id", tracing::field::display(all[0].run_id));
                self.span.record("jobs.deduped", all[0].deduped);
            }
            Ok(_) => {}
            Err(error) => self.record_error(error),
        }
        result
    }

    fn record_error(&self, error: &JobError) {
        if let Some(code) = error.code() {
            self.span.record("jobs.error.code", code.as_str());
        }
    }
}

/// One attempt's consumer span, a child of the enqueue's stored `traceparent`.
pub(crate) struct RunTrace {
    span: Span,
    context: Ambient,
}

impl RunTrace {
    /// Opens `job.<name>` for a claimed job whose enqueue stored `traceparent` (taken from the
    /// claimed job: nothing else reads it). The run's context is made only when something
    /// reads it: the span's fields when a subscriber (or `log`) takes the span, the body, an
    /// enqueue or a step ([`Ambient`]).
    pub(crate) fn start(job: &ClaimedJob, traceparent: Option<Arc<str>>) -> RunTrace {
        let context = Ambient::child_of(traceparent);
        // The trace fields make the context only when they are written.
        let span = tracing::info_span!(
            parent: None,
            "job.run",
            otel.name = %format_args!("job.{}", job.name),
            otel.kind = "consumer",
            messaging.system = SYSTEM,
            messaging.operation.type = OPERATION_PROCESS,
            messaging.destination.name = %job.queue,
            messaging.message.id = %job.id,
            jobs.job.name = %job.name,
            jobs.run.id = %job.run_id,
            jobs.attempt = job.attempt,
            jobs.max_attempts = job.max_attempts,
            jobs.outcome = Empty,
            jobs.error.code = Empty,
            jobs.actor = job.actor.as_deref(),
            trace_id = %context.trace_hex(),
            span_id = %context.span_hex(),
            parent_id = Empty,
            traceparent = Empty,
        );
        // The parent's fields parse the stored value: only for a span someone takes.
        if is_taken(&span) {
            if let Some(parent) = context.parent() {
                span.record("parent_id", tracing::field::display(parent.span_hex()));
                span.record("traceparent", tracing::field::display(parent));
            }
        }
        RunTrace { span, context }
    }

    /// Runs the attempt inside the span and records how it ended.
    pub(crate) async fn scope(self, attempt: impl Future<Output = JobExecution>) -> JobExecution {
        let execution = CURRENT
            .scope(self.context, attempt.instrument(self.span.clone()))
            .await;
        self.span
            .record("jobs.outcome", outcome_name(execution.outcome));
        if let Some(code) = execution.code {
            self.span.record("jobs.error.code", code.as_str());
        }
        execution
    }
}

/// Whether anyone takes `span`: a subscriber, or, while none is set, a `log` logger (tracing's
/// fallback writes a disabled span's fields to `log`).
fn is_taken(span: &Span) -> bool {
    !span.is_disabled()
        || (!tracing::dispatcher::has_been_set() && log::max_level() >= log::LevelFilter::Info)
}

/// Runs one step's closure inside `job.<name>.step`, a child of the run's span.
pub(crate) async fn step<T, E, F>(job: &str, name: &str, attempt: u32, work: F) -> Result<T, E>
where
    F: Future<Output = Result<T, E>>,
{
    let parent = current();
    let context = parent.map_or_else(TraceContext::new_root, |p| p.child());
    let span = tracing::info_span!(
        "job.step",
        otel.name = %format_args!("job.{job}.step"),
        otel.kind = "consumer",
        messaging.system = SYSTEM,
        jobs.job.name = %job,
        jobs.step.name = %name,
        jobs.step.attempt = attempt,
        jobs.step.status = Empty,
        trace_id = %context.trace_hex(),
        span_id = %context.span_hex(),
        parent_id = Empty,
    );
    if let Some(parent) = parent {
        span.record("parent_id", tracing::field::display(parent.span_hex()));
    }
    let result = CURRENT
        .scope(Ambient::made(context), work.instrument(span.clone()))
        .await;
    span.record(
        "jobs.step.status",
        if result.is_ok() { "ok" } else { "error" },
    );
    result
}

/// An outcome's name in spans and metric labels.
pub(crate) fn outcome_name(outcome: ExecutionOutcome) -> &'static str {
    match outcome {
        ExecutionOutcome::Completed => "ok",
        ExecutionOutcome::Suspended => "suspended",
        ExecutionOutcome::Retried => "retried",
        ExecutionOutcome::DeadLettered => "dead",
        ExecutionOutcome::Dropped => "dropped",
        ExecutionOutcome::Interrupted => "interrupted",
        ExecutionOutcome::LeaseLost => "lease_lost",
        ExecutionOutcome::Deferred => "deferred",
        ExecutionOutcome::Shed => "shed",
        ExecutionOutcome::Refused => "refused",
        ExecutionOutcome::Expired => "expired",
    }
}
