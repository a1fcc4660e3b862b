//! Readable tables for the `jobs` tool.

use crate::clock::Timestamp;
use crate::driver::introspect::{
    queue_limits_spread, JobSummary, QueuePause, WorkerQueueLimits, WorkerRow,
};
use crate::driver::QueueStats;
use crate::operator::JobDetail;

/// Columns padded to their widest cell, two spaces apart.
pub(super) fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<w$}  "));
            }
        }
        text.trim_end().to_string() + "\n"
    };
    let mut out = line(headers.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    if rows.is_empty() {
        out.push_str("(none)\n");
    }
    out
}

/// `2030-01-01 09:00:00Z`.
pub(super) fn time(at: Timestamp) -> String {
    at.format("%Y-%m-%d %H:%M:%SZ").to_string()
}

/// `3s ago`, `in 2m`.
pub(super) fn ago(at: Timestamp, now: Timestamp) -> String {
    let secs = (now - at).num_seconds();
    let (n, future) = (secs.unsigned_abs(), secs < 0);
    let amount = match n {
        0..=59 => format!("{n}s"),
        60..=3599 => format!("{}m", n / 60),
        3600..=86_399 => format!("{}h", n / 3600),
        _ => format!("{}d", n / 86_400),
    };
    if future {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

pub(super) fn queues(stats: &[QueueStats], paused: &[QueuePause]) -> String {
    let rows: Vec<Vec<String>> = stats
        .iter()
        .map(|q| {
            let p = paused.iter().any(|p| p.queue == q.queue);
            vec![
                q.queue.clone() + if p { " (paused)" } else { "" },
                q.ready.to_string(),
                q.delayed.to_string(),
                q.running.to_string(),
                q.suspended.to_string(),
                q.done.to_string(),
                q.failed.to_string(),
                q.dead.to_string(),
                q.cancelled.to_string(),
                q.oldest_ready_ms
                    .map_or("-".into(), |ms| format!("{:.1}s", ms as f64 / 1000.0)),
            ]
        })
        .collect();
    table(
        &[
            "QUEUE",
            "READY",
            "DELAYED",
            "RUNNING",
            "SUSPENDED",
            "DONE",
            "FAILED",
            "DEAD",
            "CANCELLED",
            "OLDEST READY",
        ],
        &rows,
    )
}

pub(super) fn jobs(jobs: &[JobSummary], now: Timestamp) -> String {
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .map(|j| {
            vec![
                j.id.to_string(),
                j.name.clone(),
                j.queue.clone(),
                j.state.to_string(),
                format!("{}/{}", j.attempt, j.max_attempts),
                j.priority.to_string(),
                ago(j.created_at, now),
                j.last_error_code.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    table(
        &[
            "ID",
            "JOB",
            "QUEUE",
            "STATE",
            "ATTEMPT",
            "PRIORITY",
            "CREATED",
            "LAST ERROR",
        ],
        &rows,
    )
}

/// `jobs batch <id>`.
pub(super) fn batch(report: &crate::batch::BatchReport) -> String {
    let mut text = String::new();
    let mut field = |k: &str, v: String| text.push_str(&format!("{k:<13}{v}\n"));
    field("batch", report.id.to_string());
    field("callback", report.callback.to_string());
    field(
        "state",
        if report.closed { "closed" } else { "open" }.to_string(),
    );
    field(
        "members",
        format!(
            "{} ({} settled: {} done, {} failed, {} cancelled)",
            report.size,
            report.settled,
            report.done,
            report.failed.len(),
            report.cancelled.len()
        ),
    );
    let states: Vec<String> = report
        .states
        .iter()
        .map(|(state, n)| format!("{state} {n}"))
        .collect();
    field("by state", states.join(", "));
    for id in &report.failed {
        field("failed", id.to_string());
    }
    for id in &report.cancelled {
        field("cancelled", id.to_string());
    }
    text
}

/// The retries a live job may still get and the delay before each (un-jittered), from its
/// declaration's curve; the count alone when the job is not linked into this binary.
fn retries_left(
    j: &crate::driver::JobRecord,
    declared: Option<crate::descriptor::JobDescriptor>,
) -> String {
    let Some(d) = declared else {
        let next = if j.state == crate::driver::JobState::Running {
            j.attempt.max(1)
        } else {
            j.attempt + 1
        };
        let left = j.max_attempts.saturating_sub(next);
        return format!("{left} left (delays unknown: the job is not linked into this binary)");
    };
    let delays = crate::retry::remaining_delays(&d.retry, j.state, j.attempt, j.max_attempts);
    if delays.is_empty() {
        return "none left: a failure of this attempt is final".to_string();
    }
    let shown: Vec<String> = delays.iter().map(|d| crate::duration::shown(*d)).collect();
    let jitter = match d.retry.jitter {
        crate::descriptor::Jitter::None => String::new(),
        crate::descriptor::Jitter::Equal => {
            ", each drawn from half to all of it (equal jitter)".into()
        }
        crate::descriptor::Jitter::Full => {
            ", each drawn from none to all of it (full jitter)".into()
        }
    };
    format!(
        "{} left, after {} ({} backoff{jitter})",
        delays.len(),
        shown.join(", "),
        d.retry.backoff.as_str()
    )
}

pub(super) fn show(
    detail: &JobDetail,
    declared: Option<crate::descriptor::JobDescriptor>,
    now: Timestamp,
) -> String {
    let j = &detail.job;
    let mut text = String::new();
    let mut field = |k: &str, v: String| text.push_str(&format!("{k:<13}{v}\n"));
    field("id", j.id.to_string());
    field("job", j.name.clone());
    field("queue", j.queue.clone());
    field("state", j.state.to_string());
    field("attempt", format!("{} of {}", j.attempt, j.max_attempts));
    if j.state.is_live() {
        field("retries", retries_left(j, declared));
    }
    field("run", j.run_id.to_string());
    field("tenant", j.tenant_id.clone().unwrap_or_else(|| "-".into()));
    field("actor", j.actor.clone().unwrap_or_else(|| "-".into()));
    field("priority", j.priority.to_string());
    field("key", j.idempotency_key.clone());
    let shown = crate::duration::shown;
    if let Some(rate) = declared.and_then(|d| d.rate) {
        let per_key = if rate.keyed { " per key" } else { "" };
        field(
            "rate",
            format!(
                "at most {} starts per {}{per_key}, fleet-wide",
                rate.limit,
                shown(rate.per)
            ),
        );
    }
    if let Some(window) = declared.and_then(|d| d.debounce) {
        field(
            "debounce",
            format!(
                "{}: an enqueue of its key while queued pushes it back",
                shown(window)
            ),
        );
    }
    if let Some(until) = j.unique_until {
        // The job's own period (its enqueue may have named another than the declaration's).
        let period = until
            .signed_duration_since(j.created_at)
            .to_std()
            .unwrap_or_default();
        let holds = if until > now {
            "holds its key until then, finished or not"
        } else if j.state.is_live() {
            "its period ended; it holds its key while live"
        } else {
            "its period ended; the key is free"
        };
        field(
            "unique",
            format!(
                "{}, until {} ({}): {holds}",
                shown(period),
                time(until),
                ago(until, now),
            ),
        );
    }
    if let Some(ttl) = declared.and_then(|d| d.expires_in) {
        let at = crate::clock::add(j.created_at, ttl);
        field(
            "expires",
            format!(
                "{} ({}) unless started: expires_in {}",
                time(at),
                ago(at, now),
                shown(ttl)
            ),
        );
    }
    field(
        "run at",
        format!("{} ({})", time(j.run_at), ago(j.run_at, now)),
    );
    field("created", time(j.created_at));
    field("updated", time(j.updated_at));
    if let Some(worker) = &j.claimed_by {
        field("claimed by", format!("{worker} (claim {})", j.claims));
    }
    if let Some(p) = &j.progress {
        let note = p
            .note
            .as_deref()
            .map_or(String::new(), |n| format!(" — {n}"));
        field("progress", format!("{}/{}{note}", p.done, p.total));
    }
    if let Some(error) = &j.last_error {
        field("last error", error.clone());
    }
    field("input", serde_json::to_string(&j.input).unwrap_or_default());
    let links = &detail.links;
    if crate::driver::is_blocked(j.state, j.run_at) {
        field(
            "blocked",
            "until the jobs it depends on have settled".to_string(),
        );
    }
    if let Some(policy) = links.on_dependency_failure {
        field(
            "on failure",
            format!("{} (of a dependency)", policy.as_str()),
        );
    }
    for (id, state) in &links.depends_on {
        let state = state.map_or("gone", |s| s.as_str());
        field("depends on", format!("{id} ({state})"));
    }
    for id in &links.dependents {
        field("dependent", id.to_string());
    }
    if let Some(parent) = links.parent {
        field("parent", parent.to_string());
    }
    for (id, state) in &links.children {
        let state = state.map_or("gone", |s| s.as_str());
        field("child", format!("{id} ({state})"));
    }
    if let Some(batch) = &detail.batch {
        let role = if batch.callback == j.id {
            "callback of"
        } else {
            "member of"
        };
        let open = if batch.closed { "closed" } else { "open" };
        field(
            "batch",
            format!(
                "{role} {} ({open}: {} of {} settled, {} done, {} failed, {} cancelled)",
                batch.id,
                batch.settled,
                batch.size,
                batch.done,
                batch.failed.len(),
                batch.cancelled.len()
            ),
        );
    }
    // Redacted as the input is (`Operator::inspect_job`); only a job that keeps its result
    // (`keep_result`) and completed has one.
    if let Some(result) = &j.result {
        field("result", serde_json::to_string(result).unwrap_or_default());
    }
    text.push_str("\nsteps\n");
    let rows: Vec<Vec<String>> = detail
        .steps
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.status.as_str().to_string(),
                s.attempts.to_string(),
                time(s.updated_at),
                s.error.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    text.push_str(&table(
        &["STEP", "STATUS", "RUNS", "WRITTEN", "ERROR"],
        &rows,
    ));
    text.push_str("\nhistory\n");
    let rows: Vec<Vec<String>> = detail
        .history
        .iter()
        .map(|h| {
            vec![
                time(h.at),
                h.actor.clone().unwrap_or_else(|| "-".into()),
                h.verb.clone(),
                h.detail.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    text.push_str(&table(&["WHEN", "WHO", "WHAT", "DETAIL"], &rows));
    text
}

/// The live workers, then every queue whose workers announce different limits.
pub(super) fn workers(workers: &[WorkerRow], now: Timestamp) -> String {
    let rows: Vec<Vec<String>> = workers
        .iter()
        .map(|w| {
            vec![
                w.id.clone(),
                w.host.clone(),
                w.queues.join(","),
                format!("{}/{}", w.in_flight_count, w.slots),
                queue_limits(&w.settings.queue_limits),
                ago(w.heartbeat_at, now),
                ago(w.started_at, now),
            ]
        })
        .collect();
    let mut text = table(
        &[
            "WORKER",
            "HOST",
            "QUEUES",
            "BUSY",
            "LIMITS",
            "HEARTBEAT",
            "STARTED",
        ],
        &rows,
    );
    for spread in queue_limits_spread(workers) {
        text.push_str(&format!(
            "\nwarning: the workers of queue `{}` run with different limits (give every worker of \
             a queue the same queue_limits):\n",
            spread.queue
        ));
        for announced in &spread.announced {
            let limits = announced
                .limits
                .as_ref()
                .map_or_else(|| "no limits".to_string(), ToString::to_string);
            text.push_str(&format!("  {limits}: {}\n", announced.workers.join(", ")));
        }
    }
    text
}

/// A worker's announced queue limits in one cell: `email: 10 in flight, 100 per 1m; sms: ..`.
fn queue_limits(limits: &[WorkerQueueLimits]) -> String {
    if limits.is_empty() {
        return "-".into();
    }
    limits
        .iter()
        .map(|l| format!("{}: {l}", l.queue))
        .collect::<Vec<_>>()
        .join("; ")
}
