//! The telemetry guide's OpenTelemetry setup (docs/telemetry.md): the `tracing` spans of an enqueue, a run and its step,
//! exported through the tracing-opentelemetry bridge. The stdout exporter prints them, so this
//! needs no collector; an app swaps in its OTLP exporter.
//!
//! ```text
//! cargo run -p jobs-examples --example otel
//! ```

use std::time::Duration;

use jobs::prelude::*;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[input]
struct Image {
    image_id: u64,
}

#[job(key = "resize:{image_id}", tenant = none, queue = "media")]
async fn resize(run: Run, input: Image) -> Result<(), JobError> {
    run.step("scale", async { Ok::<_, JobError>(input.image_id) })
        .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The SDK's provider with an exporter (OTLP in production); the bridge turns every
    // `tracing` span into an OpenTelemetry span, `otel.name` and `otel.kind` included.
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(opentelemetry_stdout::SpanExporter::default())
        .build();
    let tracer = provider.tracer("my-app");
    tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(tracer))
        .init();

    let jobs = Jobs::memory();
    let queued = Resize::enqueue(&jobs, Image { image_id: 7 }).await?;
    let worker = jobs
        .worker()
        .poll_interval(Duration::from_millis(20))
        .build()?
        .start();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while jobs
        .job(queued.id)
        .await?
        .is_some_and(|j| j.state.is_live())
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.shutdown().await;

    // Flushes what the exporter still holds.
    provider.shutdown()?;
    Ok(())
}
