//! `/metrics`: the queue's gauges in the Prometheus text format, encoded by prometheus-client
//! from one fresh registry per scrape (the store is the source of truth, not this process).
//! The queue gauges are each queue's depth, read without counting the done rows; the outbox's
//! gauges follow when the dashboard's client has an outbox installed.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::clock::Timestamp;
use crate::driver::introspect::{CounterTotals, QueuePause, WorkerRow};
use crate::driver::outbox::OutboxStats;
use crate::driver::QueueStats;
use crate::error::{ErrorCode, JobError};
use crate::telemetry::OutboxGauge;

type Labels = Vec<(&'static str, String)>;

/// What one scrape reports.
pub(crate) struct Scrape<'a> {
    pub queues: &'a [QueueStats],
    pub paused: &'a [QueuePause],
    pub workers: &'a [WorkerRow],
    pub last_hour: &'a [CounterTotals],
    /// The outbox's figures, when the client has one, and the time they were read at.
    pub outbox: Option<(&'a OutboxStats, Timestamp)>,
}

/// The exposition text of one scrape.
pub(crate) fn render(scrape: &Scrape<'_>) -> Result<String, JobError> {
    let mut registry = Registry::with_prefix("jobs");
    let jobs = Family::<Labels, Gauge>::default();
    let oldest = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    let paused = Family::<Labels, Gauge>::default();
    for q in scrape.queues {
        for (state, n) in [
            ("ready", q.ready),
            ("delayed", q.delayed),
            ("running", q.running),
            ("suspended", q.suspended),
            ("failed", q.failed),
            ("dead", q.dead),
            ("cancelled", q.cancelled),
        ] {
            jobs.get_or_create(&vec![
                ("queue", q.queue.clone()),
                ("state", state.to_string()),
            ])
            .set(n as i64);
        }
        oldest
            .get_or_create(&vec![("queue", q.queue.clone())])
            .set(q.oldest_ready_ms.unwrap_or(0) as f64 / 1000.0);
        let is_paused = scrape.paused.iter().any(|p| p.queue == q.queue);
        paused
            .get_or_create(&vec![("queue", q.queue.clone())])
            .set(i64::from(is_paused));
    }
    registry.register(
        "queue_jobs",
        "Jobs in each queue by state, done jobs left out (see last_hour_outcomes)",
        jobs,
    );
    registry.register(
        "queue_oldest_ready_seconds",
        "Age of the oldest ready and due job",
        oldest,
    );
    registry.register("queue_paused", "1 while the queue is paused", paused);
    let workers = Gauge::<i64>::default();
    workers.set(scrape.workers.len() as i64);
    registry.register("workers", "Live workers", workers);
    let busy = Gauge::<i64>::default();
    busy.set(
        scrape
            .workers
            .iter()
            .map(|w| i64::from(w.in_flight_count))
            .sum(),
    );
    registry.register("workers_busy_slots", "Jobs the live workers run", busy);
    let hour = Family::<Labels, Gauge>::default();
    for t in scrape.last_hour {
        for (outcome, n) in [
            ("done", t.done),
            ("retried", t.retried),
            ("failed", t.failed),
            ("dead", t.dead),
        ] {
            hour.get_or_create(&vec![
                ("job", t.name.clone()),
                ("outcome", outcome.to_string()),
            ])
            .set(n as i64);
        }
    }
    registry.register(
        "last_hour_outcomes",
        "Attempts that ended in the last hour, by job and outcome",
        hour,
    );
    if let Some((outbox, now)) = scrape.outbox {
        register_outbox(&mut registry, outbox, now);
    }
    let mut text = String::new();
    encode(&mut text, &registry)
        .map_err(|_| JobError::new(ErrorCode::Invariant, "the metrics did not encode"))?;
    Ok(text)
}

/// The outbox's gauges (`telemetry`'s table, as `Operator::metrics_text` names them), under
/// this registry's `jobs` prefix (`jobs_outbox_backlog`, ...).
fn register_outbox(registry: &mut Registry, stats: &OutboxStats, now: Timestamp) {
    for (name, help, value) in crate::telemetry::outbox_gauges(stats, now) {
        match value {
            OutboxGauge::Count(n) => {
                let gauge = Gauge::<i64>::default();
                gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
                registry.register(name, help, gauge);
            }
            OutboxGauge::Seconds(secs) => {
                let gauge = Gauge::<f64, AtomicU64>::default();
                gauge.set(secs);
                registry.register(name, help, gauge);
            }
        }
    }
}
