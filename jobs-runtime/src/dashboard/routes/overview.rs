//! The overview (each queue's depth by state, oldest ready age, paused flag, the last hour's
//! throughput, and the transactional outbox when the client has one) and `/metrics`.

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::Extension;
use serde_json::{json, Value};

use super::{fleet_wide, page, Note, Page};
use crate::dashboard::access::Ctx;
use crate::dashboard::{chart, metrics, Shared};
use crate::driver::introspect::{
    CounterBucket, CounterTotals, CounterTotalsParams, CountersParams,
};
use crate::driver::outbox::OutboxStats;
use crate::error::{ErrorCode, JobError};

/// Every job name's counters over the last hour: the totals, and their one-minute buckets.
async fn last_hour(dash: &Shared) -> Result<(Vec<CounterTotals>, Vec<CounterBucket>), JobError> {
    let operator = dash.jobs.operator();
    let introspect = operator.introspect()?;
    let since = dash.jobs.now() - chrono::Duration::minutes(chart::MINUTES);
    let totals = introspect
        .counter_totals(&CounterTotalsParams { since })
        .await?;
    let mut buckets = Vec::new();
    for total in &totals {
        let params = CountersParams {
            name: &total.name,
            since,
        };
        buckets.extend(introspect.counters(&params).await?);
    }
    Ok((totals, buckets))
}

/// The outbox's figures, when the dashboard's client has one installed: `None` without one.
async fn outbox_stats(dash: &Shared) -> Option<Result<OutboxStats, JobError>> {
    Some(dash.jobs.outbox()?.outbox_stats().await)
}

/// The overview's outbox panel. A failed read shows in the panel (its code and message) rather
/// than taking the page down: the outbox may live in another database than the jobs.
fn outbox_panel(read: Result<OutboxStats, JobError>, now: crate::clock::Timestamp) -> Value {
    match read {
        Ok(stats) => json!({
            "backlog": stats.backlog,
            "oldest": stats.oldest_staged_at.map(|_| {
                format!("{:.1}s", crate::telemetry::oldest_staged_seconds(&stats, now))
            }),
            "failing": stats.failing,
            "last_error_code": stats.last_error_code,
            "refused": stats.refused,
            "published": stats.published,
            "relay": stats.lease.as_ref().map(|lease| json!({
                "holder": lease.holder,
                "ago": format!("{:.1}s", crate::telemetry::lease_claim_seconds(lease, now)),
            })),
        }),
        Err(error) => json!({ "error": {
            "code": error.code().map_or("X_ERROR", ErrorCode::as_str),
            "message": error.message(),
        }}),
    }
}

/// `GET /`.
pub(super) async fn show(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    Query(note): Query<Note>,
) -> Page {
    if dash.options.tenant.is_some() {
        // Queue counters and counters per job name span every tenant.
        return page(
            &dash,
            &ctx,
            "overview.html",
            note.note.as_deref(),
            json!({ "scoped": true }),
        );
    }
    let operator = dash.jobs.operator();
    // Not `stats`: counting the done rows would read the whole table (see `queue_depth`).
    let queues = super::depths(&dash).await?;
    let paused = operator.introspect()?.queue_paused().await?;
    let workers = operator.workers().await?;
    let (totals, buckets) = last_hour(&dash).await?;
    let rows: Vec<_> = queues
        .iter()
        .map(|q| {
            json!({
                "stats": q,
                "paused": paused.iter().any(|p| p.queue == q.queue),
                "oldest_ready": q.oldest_ready_ms.map(|ms| format!("{:.1}s", ms as f64 / 1000.0)),
            })
        })
        .collect();
    let outbox = outbox_stats(&dash)
        .await
        .map(|read| outbox_panel(read, dash.jobs.now()));
    let chart = chart::throughput(&buckets, dash.jobs.now());
    // The strip across the top: every queue's rows by state, summed.
    let sum = |f: fn(&crate::driver::QueueStats) -> u64| queues.iter().map(f).sum::<u64>();
    let summary = json!({
        "ready": sum(|q| q.ready),
        "delayed": sum(|q| q.delayed),
        "running": sum(|q| q.running),
        "suspended": sum(|q| q.suspended),
        "failed": sum(|q| q.failed),
        "dead": sum(|q| q.dead),
    });
    page(
        &dash,
        &ctx,
        "overview.html",
        note.note.as_deref(),
        json!({
            "queues": rows,
            "summary": summary,
            "chart": chart,
            "totals": totals,
            "workers": workers.len(),
            "busy": workers.iter().map(|w| u64::from(w.in_flight_count)).sum::<u64>(),
            "slots": workers.iter().map(|w| u64::from(w.slots)).sum::<u64>(),
            "outbox": outbox,
        }),
    )
}

/// The Prometheus text format's media type: a browser shows it, a scraper reads it.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `GET /metrics`: the Prometheus text format, encoded by prometheus-client. The queue gauges
/// come from each queue's depth (as the overview's), which leaves the done rows uncounted, so a
/// scrape costs the same at a hundred or a million finished jobs; done work is the counters'
/// `jobs_last_hour_outcomes`. With an outbox installed, its gauges follow (`jobs_outbox_*`); a
/// failed read of it fails the scrape, as a failed read of the queues does.
pub(super) async fn metrics(State(dash): State<Shared>) -> Page {
    fleet_wide(&dash, "the fleet's metrics")?;
    let operator = dash.jobs.operator();
    let queues = super::depths(&dash).await?;
    let paused = operator.introspect()?.queue_paused().await?;
    let workers = operator.workers().await?;
    let (totals, _) = last_hour(&dash).await?;
    let outbox = outbox_stats(&dash).await.transpose()?;
    let text = metrics::render(&metrics::Scrape {
        queues: &queues,
        paused: &paused,
        workers: &workers,
        last_hour: &totals,
        outbox: outbox.as_ref().map(|stats| (stats, dash.jobs.now())),
    })?;
    Ok(([(header::CONTENT_TYPE, PROMETHEUS_TEXT)], text).into_response())
}
