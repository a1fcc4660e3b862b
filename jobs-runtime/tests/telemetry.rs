//! Telemetry: the producer span of an enqueue, the consumer span of each run and one span per
//! step, with their OpenTelemetry messaging attributes; the traceparent stored on the job joins
//! them into one trace; metrics rendered as Prometheus text.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use jobs::prelude::*;
use jobs::telemetry::TraceContext;
use jobs::testing::TestKit;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// One captured span: its static name and every field recorded on it, as text.
#[derive(Debug, Clone, Default)]
struct Captured {
    name: &'static str,
    fields: BTreeMap<String, String>,
}

impl Captured {
    fn get(&self, field: &str) -> &str {
        self.fields
            .get(field)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("span `{}` has no `{field}`: {:?}", self.name, self.fields))
    }
}

#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<(u64, Captured)>>>,
}

impl Capture {
    fn named(&self, name: &str) -> Vec<Captured> {
        self.spans
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, s)| s.name == name)
            .map(|(_, s)| s.clone())
            .collect()
    }
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
}

impl<S: tracing::Subscriber> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let mut span = Captured {
            name: attrs.metadata().name(),
            ..Captured::default()
        };
        attrs.record(&mut Fields(&mut span.fields));
        self.spans.lock().unwrap().push((id.into_u64(), span));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut spans = self.spans.lock().unwrap();
        if let Some((_, span)) = spans.iter_mut().rev().find(|(i, _)| *i == id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }
}

fn capture() -> (Capture, tracing::subscriber::DefaultGuard) {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let guard = tracing::subscriber::set_default(subscriber);
    (capture, guard)
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct ChargeInput {
    order_id: u64,
    card_token: String,
}

#[job(name = "telemetry.charge", key = "charge:{order_id}", tenant = none, queue = "payments")]
async fn charge(run: Run, input: ChargeInput) -> Result<(), JobError> {
    run.step("authorize", async { Ok::<_, JobError>(input.order_id) })
        .await?;
    run.step("capture", async { Ok::<_, JobError>(()) }).await?;
    Ok(())
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct ParentInput {
    id: u64,
}

#[job(name = "telemetry.parent", key = "parent:{id}", tenant = none, queue = "payments")]
async fn parent(run: Run, input: ParentInput) -> Result<(), JobError> {
    let jobs = run.context::<Jobs>()?;
    run.step("fan-out", async {
        Charge::enqueue(
            &jobs,
            ChargeInput {
                order_id: input.id,
                card_token: "tok_secret".into(),
            },
        )
        .await
        .map(|_| ())
    })
    .await
}

#[tokio::test]
async fn one_trace_spans_the_enqueue_the_run_and_its_steps() {
    let (spans, _guard) = capture();
    let kit = TestKit::new();
    let queued = kit
        .enqueue::<Charge>(ChargeInput {
            order_id: 42,
            card_token: "tok_secret".into(),
        })
        .await;
    kit.run_until_idle().await;

    let enqueue = &spans.named("job.enqueue")[0];
    assert_eq!(enqueue.get("otel.name"), "job.telemetry.charge.enqueue");
    assert_eq!(enqueue.get("otel.kind"), "producer");
    assert_eq!(enqueue.get("messaging.system"), "jobs");
    assert_eq!(enqueue.get("messaging.operation.type"), "send");
    assert_eq!(enqueue.get("messaging.destination.name"), "payments");
    assert_eq!(enqueue.get("messaging.message.id"), queued.id.to_string());
    assert_eq!(enqueue.get("jobs.job.name"), "telemetry.charge");
    assert_eq!(enqueue.get("jobs.deduped"), "false");

    // The row carries the producer span's traceparent.
    let row = kit.job(queued.id).await;
    let stored = TraceContext::parse(row.traceparent.as_deref().unwrap()).unwrap();
    assert_eq!(enqueue.get("traceparent"), stored.to_string());
    assert_eq!(enqueue.get("trace_id"), stored.trace_id());
    assert_eq!(enqueue.get("span_id"), stored.span_id());

    // The run is a consumer span in the same trace, a child of the enqueue.
    let run = &spans.named("job.run")[0];
    assert_eq!(run.get("otel.name"), "job.telemetry.charge");
    assert_eq!(run.get("otel.kind"), "consumer");
    assert_eq!(run.get("messaging.system"), "jobs");
    assert_eq!(run.get("messaging.operation.type"), "process");
    assert_eq!(run.get("messaging.destination.name"), "payments");
    assert_eq!(run.get("messaging.message.id"), queued.id.to_string());
    assert_eq!(run.get("jobs.run.id"), queued.run_id.to_string());
    assert_eq!(run.get("jobs.attempt"), "1");
    assert_eq!(run.get("jobs.outcome"), "ok");
    assert_eq!(run.get("trace_id"), stored.trace_id());
    assert_eq!(run.get("parent_id"), stored.span_id());
    assert_ne!(run.get("span_id"), stored.span_id());

    // One span per step, children of the run.
    let steps = spans.named("job.step");
    let names: Vec<&str> = steps.iter().map(|s| s.get("jobs.step.name")).collect();
    assert_eq!(names, ["authorize", "capture"]);
    for step in &steps {
        assert_eq!(step.get("otel.name"), "job.telemetry.charge.step");
        assert_eq!(step.get("trace_id"), stored.trace_id());
        assert_eq!(step.get("parent_id"), run.get("span_id"));
        assert_eq!(step.get("jobs.step.status"), "ok");
    }

    // Nothing from the input or the key reaches a span.
    for (_, span) in spans.spans.lock().unwrap().iter() {
        for value in span.fields.values() {
            assert!(!value.contains("tok_secret"), "{span:?}");
            assert!(!value.contains("charge:42"), "{span:?}");
        }
    }
}

#[tokio::test]
async fn a_given_traceparent_is_stored_and_parents_the_run() {
    let (spans, _guard) = capture();
    let kit = TestKit::new();
    let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let queued = kit
        .jobs()
        .enqueue_with::<Charge>(
            ChargeInput {
                order_id: 7,
                card_token: "tok".into(),
            },
            EnqueueOptions::new().traceparent(incoming),
        )
        .await
        .unwrap();
    assert_eq!(
        kit.job(queued.id).await.traceparent.as_deref(),
        Some(incoming)
    );
    kit.run_until_idle().await;
    let enqueue = &spans.named("job.enqueue")[0];
    assert_eq!(enqueue.get("trace_id"), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(enqueue.get("parent_id"), "00f067aa0ba902b7");
    let run = &spans.named("job.run")[0];
    assert_eq!(run.get("trace_id"), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(run.get("parent_id"), "00f067aa0ba902b7");
}

#[tokio::test]
async fn the_actor_is_a_field_of_the_enqueue_and_of_the_run() {
    let (spans, _guard) = capture();
    let kit = TestKit::new();
    let queued = kit
        .jobs()
        .enqueue_with::<Charge>(
            ChargeInput {
                order_id: 9,
                card_token: "tok".into(),
            },
            EnqueueOptions::new().actor("user:42"),
        )
        .await
        .unwrap();
    assert_eq!(kit.job(queued.id).await.actor.as_deref(), Some("user:42"));
    kit.run_until_idle().await;
    assert_eq!(spans.named("job.enqueue")[0].get("jobs.actor"), "user:42");
    assert_eq!(spans.named("job.run")[0].get("jobs.actor"), "user:42");

    // An enqueue that names no actor records none.
    let (spans, _guard) = capture();
    kit.enqueue::<Charge>(ChargeInput {
        order_id: 10,
        card_token: "tok".into(),
    })
    .await;
    kit.run_until_idle().await;
    assert!(!spans.named("job.enqueue")[0]
        .fields
        .contains_key("jobs.actor"));
    assert!(!spans.named("job.run")[0].fields.contains_key("jobs.actor"));
}

#[tokio::test]
async fn an_invalid_traceparent_is_replaced_by_the_producer_span() {
    let kit = TestKit::new();
    let queued = kit
        .jobs()
        .enqueue_with::<Charge>(
            ChargeInput {
                order_id: 8,
                card_token: "tok".into(),
            },
            EnqueueOptions::new().traceparent("not-a-traceparent"),
        )
        .await
        .unwrap();
    let stored = kit.job(queued.id).await.traceparent.unwrap();
    assert!(TraceContext::parse(&stored).is_some(), "{stored}");
}

#[tokio::test]
async fn a_job_enqueued_from_a_step_joins_its_parents_trace() {
    let (spans, _guard) = capture();
    // The parent's body enqueues through the `Jobs` its worker was given as context.
    let jobs = Jobs::memory();
    let worker = jobs
        .worker()
        .context(Arc::new(jobs.clone()))
        .build()
        .unwrap();
    let parent = Parent::enqueue(&jobs, ParentInput { id: 5 }).await.unwrap();
    worker.tick().await.unwrap();
    let row = jobs.job(parent.id).await.unwrap().unwrap();
    assert_eq!(row.state, JobState::Done);

    let parent_trace = TraceContext::parse(row.traceparent.as_deref().unwrap()).unwrap();
    let enqueues = spans.named("job.enqueue");
    let child_enqueue = enqueues
        .iter()
        .find(|s| s.get("jobs.job.name") == "telemetry.charge")
        .unwrap();
    let fan_out = spans
        .named("job.step")
        .into_iter()
        .find(|s| s.get("jobs.step.name") == "fan-out")
        .unwrap();
    assert_eq!(child_enqueue.get("trace_id"), parent_trace.trace_id());
    assert_eq!(child_enqueue.get("parent_id"), fan_out.get("span_id"));
}

#[job(name = "telemetry.relay", key = "relay:{id}", tenant = none, queue = "payments")]
async fn relay(run: Run, input: ParentInput) -> Result<(), JobError> {
    // Straight from the body, not from a step: the run's own context is the parent.
    let jobs = run.context::<Jobs>()?;
    let ambient = TraceContext::current().expect("a run has a context");
    Charge::enqueue(
        &jobs,
        ChargeInput {
            order_id: input.id,
            card_token: ambient.to_string(),
        },
    )
    .await
    .map(|_| ())
}

/// With no subscriber the run's context is made only when read (here by the body and by its
/// enqueue); what they read is still one child of the stored traceparent.
#[tokio::test]
async fn with_no_subscriber_a_run_still_descends_from_its_enqueue() {
    let jobs = Jobs::memory();
    let worker = jobs
        .worker()
        .queues(["payments"])
        .context(Arc::new(jobs.clone()))
        .build()
        .unwrap();
    let relay = Relay::enqueue(&jobs, ParentInput { id: 9 }).await.unwrap();
    worker.tick().await.unwrap();
    let row = jobs.job(relay.id).await.unwrap().unwrap();
    assert_eq!(row.state, JobState::Done);
    let stored = TraceContext::parse(row.traceparent.as_deref().unwrap()).unwrap();

    let page = jobs
        .operator()
        .list_jobs(&jobs::driver::introspect::JobListParams {
            name: Some("telemetry.charge".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let child = jobs.job(page.jobs[0].id).await.unwrap().unwrap();
    let seen: ChargeInput = serde_json::from_value(child.input.clone()).unwrap();
    let seen = TraceContext::parse(&seen.card_token).unwrap();
    let child = TraceContext::parse(child.traceparent.as_deref().unwrap()).unwrap();
    // The body's context: in the stored trace, a span of its own.
    assert_eq!(seen.trace_id(), stored.trace_id());
    assert_ne!(seen.span_id(), stored.span_id());
    // The enqueue's producer span: in the same trace, under the body's context.
    assert_eq!(child.trace_id(), stored.trace_id());
    assert_ne!(child.span_id(), seen.span_id());
}

#[tokio::test]
async fn workers_feed_the_metrics_and_queue_stats_the_gauges() {
    let kit = TestKit::new();
    kit.enqueue::<Charge>(ChargeInput {
        order_id: 1,
        card_token: "t".into(),
    })
    .await;
    kit.enqueue::<Charge>(ChargeInput {
        order_id: 2,
        card_token: "t".into(),
    })
    .await;
    let before = kit.jobs().operator().metrics_text().await.unwrap();
    assert!(
        before.contains("queue_depth{queue=\"payments\"} 2\n"),
        "{before}"
    );
    kit.run_until_idle().await;
    let text = kit.jobs().operator().metrics_text().await.unwrap();
    assert!(
        text.contains("queue_depth{queue=\"payments\"} 0\n"),
        "{text}"
    );
    assert!(
        text.contains("jobs_total{queue=\"payments\",job=\"telemetry.charge\",outcome=\"ok\"} 2\n"),
        "{text}"
    );
    assert!(text.contains("# TYPE job_leases_lost_total counter\n"));
    assert!(!text.contains("charge:1"));
}

#[tokio::test]
async fn an_installed_outbox_adds_its_gauges_to_the_metrics() {
    use jobs::driver::outbox::{OutboxClaimParams, OutboxSettle, OutboxStore};
    use jobs::driver::MemoryOutbox;
    use jobs::outbox::OutboxMode;
    use jobs::telemetry::{METRIC_NAMES, OUTBOX_METRIC_NAMES};

    let kit = TestKit::new();
    let without = kit.jobs().operator().metrics_text().await.unwrap();
    assert!(!without.contains("outbox"), "{without}");

    let outbox = MemoryOutbox::new();
    let jobs = kit.jobs().with_outbox(outbox.clone(), OutboxMode::Optional);
    let mut tx = outbox.begin();
    for order_id in 1..=3 {
        Charge::enqueue_in(
            &jobs,
            &mut tx,
            ChargeInput {
                order_id,
                card_token: "tok_secret".into(),
            },
        )
        .await
        .unwrap();
    }
    tx.commit();
    // One publish failed: the relay handed its row back with the failure's code.
    let held = outbox
        .outbox_claim(&OutboxClaimParams {
            holder: "relay".into(),
            limit: 1,
            lease: std::time::Duration::from_secs(30),
            now: jobs.now(),
            after: None,
        })
        .await
        .unwrap();
    let settle = OutboxSettle {
        holder: "relay",
        now: jobs.now(),
    };
    let failed = Some((held[0].request.id, "X_DRIVER_UNAVAILABLE"));
    outbox
        .outbox_release(&settle, &[held[0].request.id], failed)
        .await
        .unwrap();
    kit.advance(std::time::Duration::from_millis(42_500));

    let text = jobs.operator().metrics_text().await.unwrap();
    for line in [
        "\noutbox_backlog 3\n",
        "\noutbox_oldest_staged_seconds 42.5\n",
        "\noutbox_failing 1\n",
        "\noutbox_refused 0\n",
        "\noutbox_published 0\n",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
    // Every metric once, the runtime's first and the outbox's after.
    let written: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    let expected: Vec<&str> = METRIC_NAMES
        .iter()
        .chain(OUTBOX_METRIC_NAMES.iter())
        .copied()
        .collect();
    assert_eq!(written, expected);
    assert!(!text.contains("tok_secret") && !text.contains("charge:"));
    // The client without the outbox still renders none: the gauges are read per call.
    let plain = kit.jobs().operator().metrics_text().await.unwrap();
    assert!(!plain.contains("outbox"), "{plain}");
}
