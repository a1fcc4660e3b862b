//! A small metrics registry: counters fed by the workers, gauges refreshed from `queue_stats`,
//! rendered as Prometheus exposition text, and the transactional outbox's gauges from one
//! `outbox_stats` read. Labels are queue names, job names and outcomes only: all declared, so
//! the series stay few.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use super::spans::outcome_name;
use crate::clock::Timestamp;
use crate::driver::outbox::{OutboxLease, OutboxStats};
use crate::driver::{JobRecord, JobState, QueueStats};
use crate::execution::{ExecutionOutcome, JobExecution};

/// Every metric [`Metrics::render_prometheus`] writes, in the order it writes them.
pub const METRIC_NAMES: [&str; 5] = [
    "queue_depth",
    "queue_oldest_ready_seconds",
    "queue_dead_jobs",
    "jobs_total",
    "job_leases_lost_total",
];

/// The outbox's gauges, which [`Operator::metrics_text`](crate::Operator::metrics_text) adds
/// after [`METRIC_NAMES`] when the client has an outbox installed
/// ([`Jobs::with_outbox`](crate::Jobs::with_outbox)), in the order it writes them.
///
/// | metric | type | what |
/// |---|---|---|
/// | `outbox_backlog` | gauge | rows staged and committed, not yet published nor refused |
/// | `outbox_oldest_staged_seconds` | gauge | age of the oldest of them (0 when none): how far the relay is behind |
/// | `outbox_failing` | gauge | backlog rows whose last publish failed (the relay retries them) |
/// | `outbox_refused` | gauge | rows the job store refused for good: never published, kept for the operator |
/// | `outbox_published` | gauge | published rows kept as the audit trail, until the outbox's purge |
/// | `outbox_lease_held` | gauge | 1 while a relay holds the outbox's lease, else 0 |
/// | `outbox_lease_claim_seconds` | gauge | seconds since that relay last claimed (0 when none holds it): past its lease, it has lapsed |
pub const OUTBOX_METRIC_NAMES: [&str; 7] = [
    "outbox_backlog",
    "outbox_oldest_staged_seconds",
    "outbox_failing",
    "outbox_refused",
    "outbox_published",
    "outbox_lease_held",
    "outbox_lease_claim_seconds",
];

/// The runtime's metrics. Every [`Jobs`](crate::Jobs) owns one (`jobs.metrics()`), shared by
/// the workers it builds.
///
/// | metric | type | labels | what |
/// |---|---|---|---|
/// | `queue_depth` | gauge | `queue` | jobs ready and due, waiting for a worker: the autoscaling signal |
/// | `queue_oldest_ready_seconds` | gauge | `queue` | age of the oldest ready and due job (0 when none) |
/// | `queue_dead_jobs` | gauge | `queue` | dead-lettered rows (a gauge: a counter's rate is flat once the dead letters stop growing) |
/// | `jobs_total` | counter | `queue`, `job`, `outcome` | attempts by how they ended: `ok`, `retried`, `dead`, `dropped`, `refused`, `suspended`, `interrupted`, `shed`, `deferred` |
/// | `job_leases_lost_total` | counter | `queue` | attempts whose claim was lost before they settled, and final attempts buried after their lease lapsed |
///
/// ```
/// use jobs::telemetry::Metrics;
///
/// let metrics = Metrics::new();
/// let text = metrics.render_prometheus();
/// assert!(text.contains("# TYPE jobs_total counter"));
/// ```
#[derive(Debug, Default)]
pub struct Metrics {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// queue -> job -> outcome -> count.
    outcomes: BTreeMap<String, BTreeMap<String, BTreeMap<&'static str, u64>>>,
    /// queue -> count.
    leases_lost: BTreeMap<String, u64>,
    /// queue -> the last `queue_stats` gauges.
    queues: BTreeMap<String, QueueGauges>,
}

#[derive(Debug, Default, Clone, Copy)]
struct QueueGauges {
    depth: u64,
    oldest_ready_seconds: f64,
    dead: u64,
}

impl Metrics {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one attempt's ending: a lost claim in `job_leases_lost_total`, anything else in
    /// `jobs_total`.
    pub fn record_execution(&self, queue: &str, execution: &JobExecution) {
        self.record_outcome(queue, &execution.name, execution.outcome);
    }

    /// Counts one ending of `job` on `queue`.
    pub fn record_outcome(&self, queue: &str, job: &str, outcome: ExecutionOutcome) {
        let mut state = self.state();
        if outcome == ExecutionOutcome::LeaseLost {
            match state.leases_lost.get_mut(queue) {
                Some(count) => *count += 1,
                None => {
                    state.leases_lost.insert(queue.to_string(), 1);
                }
            }
            return;
        }
        // The hot path: no allocation once a series exists.
        let outcome = outcome_name(outcome);
        if let Some(count) = state
            .outcomes
            .get_mut(queue)
            .and_then(|jobs| jobs.get_mut(job))
            .and_then(|outcomes| outcomes.get_mut(outcome))
        {
            *count += 1;
            return;
        }
        *state
            .outcomes
            .entry(queue.to_string())
            .or_default()
            .entry(job.to_string())
            .or_default()
            .entry(outcome)
            .or_insert(0) += 1;
    }

    /// A final attempt whose lease lapsed and that the claim buried (`dead`, or `failed` for a
    /// job without dead letters): one lost lease and one ending.
    pub fn record_buried(&self, row: &JobRecord) {
        let outcome = if row.state == JobState::Failed {
            ExecutionOutcome::Dropped
        } else {
            ExecutionOutcome::DeadLettered
        };
        self.record_outcome(&row.queue, &row.name, ExecutionOutcome::LeaseLost);
        self.record_outcome(&row.queue, &row.name, outcome);
    }

    /// Replaces the queue gauges with what `queue_stats` answered.
    pub fn observe_queues(&self, stats: &[QueueStats]) {
        let mut state = self.state();
        state.queues = stats
            .iter()
            .map(|s| {
                let gauges = QueueGauges {
                    depth: s.ready,
                    oldest_ready_seconds: s.oldest_ready_ms.unwrap_or(0) as f64 / 1000.0,
                    dead: s.dead,
                };
                (s.queue.clone(), gauges)
            })
            .collect();
    }

    /// `jobs_total` for one series (0 when it was never counted).
    pub fn jobs_total(&self, queue: &str, job: &str, outcome: ExecutionOutcome) -> u64 {
        self.state()
            .outcomes
            .get(queue)
            .and_then(|jobs| jobs.get(job))
            .and_then(|outcomes| outcomes.get(outcome_name(outcome)))
            .copied()
            .unwrap_or(0)
    }

    /// `job_leases_lost_total` for one queue.
    pub fn leases_lost(&self, queue: &str) -> u64 {
        self.state().leases_lost.get(queue).copied().unwrap_or(0)
    }

    /// The Prometheus text exposition format (version 0.0.4): every metric with its `HELP`
    /// and `TYPE` lines, series sorted by label, so two renders of the same state are equal.
    pub fn render_prometheus(&self) -> String {
        let state = self.state();
        let mut out = String::new();
        let gauge =
            |out: &mut String, name: &str, help: &str, value: &dyn Fn(&QueueGauges) -> String| {
                header(out, name, help, "gauge");
                for (queue, gauges) in &state.queues {
                    let _ = writeln!(
                        out,
                        "{name}{{queue=\"{}\"}} {}",
                        escape(queue),
                        value(gauges)
                    );
                }
            };
        gauge(
            &mut out,
            "queue_depth",
            "Jobs ready and due, waiting for a worker.",
            &|g| g.depth.to_string(),
        );
        gauge(
            &mut out,
            "queue_oldest_ready_seconds",
            "Age of the oldest ready and due job, in seconds.",
            &|g| format_float(g.oldest_ready_seconds),
        );
        gauge(&mut out, "queue_dead_jobs", "Dead-lettered jobs.", &|g| {
            g.dead.to_string()
        });
        header(
            &mut out,
            "jobs_total",
            "Attempts by how they ended.",
            "counter",
        );
        for (queue, jobs) in &state.outcomes {
            for (job, outcomes) in jobs {
                for (outcome, count) in outcomes {
                    let _ = writeln!(
                        out,
                        "jobs_total{{queue=\"{}\",job=\"{}\",outcome=\"{outcome}\"}} {count}",
                        escape(queue),
                        escape(job)
                    );
                }
            }
        }
        header(
            &mut out,
            "job_leases_lost_total",
            "Attempts whose claim was lost before they settled.",
            "counter",
        );
        for (queue, count) in &state.leases_lost {
            let _ = writeln!(
                out,
                "job_leases_lost_total{{queue=\"{}\"}} {count}",
                escape(queue)
            );
        }
        out
    }
}

/// How long ago the oldest backlog row of the outbox was staged, in seconds: 0 when there is
/// none, or when a clock ahead of `now` staged it.
pub(crate) fn oldest_staged_seconds(stats: &OutboxStats, now: Timestamp) -> f64 {
    stats
        .oldest_staged_at
        .map_or(0.0, |at| seconds_since(at, now))
}

/// How long ago the relay holding the outbox's lease last claimed, in seconds: 0 for a clock
/// ahead of `now`.
pub(crate) fn lease_claim_seconds(lease: &OutboxLease, now: Timestamp) -> f64 {
    seconds_since(lease.claimed_at, now)
}

/// Seconds from `at` to `now`, to the millisecond; 0 when `at` is after `now`.
fn seconds_since(at: Timestamp, now: Timestamp) -> f64 {
    (now - at).num_milliseconds().max(0) as f64 / 1000.0
}

/// One of the outbox's gauges at one read: a count, or a time in seconds.
#[derive(Debug, Clone, Copy)]
pub(crate) enum OutboxGauge {
    Count(u64),
    Seconds(f64),
}

/// The outbox's gauges ([`OUTBOX_METRIC_NAMES`], in order) from `stats` read at `now`: each
/// name, its help (one sentence, no final stop) and its value. Both renderers read this table:
/// [`render_outbox`] and the dashboard's registry.
pub(crate) fn outbox_gauges(
    stats: &OutboxStats,
    now: Timestamp,
) -> [(&'static str, &'static str, OutboxGauge); 7] {
    use OutboxGauge::{Count, Seconds};
    let claim = stats
        .lease
        .as_ref()
        .map_or(0.0, |lease| lease_claim_seconds(lease, now));
    [
        (
            "outbox_backlog",
            "Outbox rows staged and committed, not yet published nor refused",
            Count(stats.backlog),
        ),
        (
            "outbox_oldest_staged_seconds",
            "Age of the oldest outbox row not yet published nor refused, in seconds",
            Seconds(oldest_staged_seconds(stats, now)),
        ),
        (
            "outbox_failing",
            "Outbox rows whose last publish failed (retried)",
            Count(stats.failing),
        ),
        (
            "outbox_refused",
            "Outbox rows the job store refused for good",
            Count(stats.refused),
        ),
        (
            "outbox_published",
            "Published outbox rows kept until the purge",
            Count(stats.published),
        ),
        (
            "outbox_lease_held",
            "1 while a relay holds the outbox's lease, else 0",
            Count(u64::from(stats.lease.is_some())),
        ),
        (
            "outbox_lease_claim_seconds",
            "Seconds since the relay holding the outbox's lease last claimed, 0 when none holds it",
            Seconds(claim),
        ),
    ]
}

/// The outbox's gauges ([`OUTBOX_METRIC_NAMES`]) as exposition text, from `stats` read at `now`.
/// Nothing here is kept between scrapes: the outbox's store is the source of truth.
pub(crate) fn render_outbox(stats: &OutboxStats, now: Timestamp) -> String {
    let mut out = String::new();
    for (name, help, value) in outbox_gauges(stats, now) {
        header(&mut out, name, &format!("{help}."), "gauge");
        let _ = match value {
            OutboxGauge::Count(n) => writeln!(out, "{name} {n}"),
            OutboxGauge::Seconds(secs) => writeln!(out, "{name} {}", format_float(secs)),
        };
    }
    out
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A label value, escaped as the exposition format asks.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

fn format_float(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_metric_sorted_and_escaped() {
        let metrics = Metrics::new();
        metrics.observe_queues(&[
            QueueStats {
                queue: "reports".into(),
                ready: 2,
                dead: 1,
                oldest_ready_ms: Some(1_500),
                ..QueueStats::default()
            },
            QueueStats {
                queue: "billing".into(),
                ready: 0,
                ..QueueStats::default()
            },
        ]);
        metrics.record_outcome("billing", "billing.charge", ExecutionOutcome::Completed);
        metrics.record_outcome("billing", "billing.charge", ExecutionOutcome::Completed);
        metrics.record_outcome("billing", "billing.charge", ExecutionOutcome::Retried);
        metrics.record_outcome("odd\"queue", "a\\b", ExecutionOutcome::DeadLettered);
        metrics.record_outcome("billing", "billing.charge", ExecutionOutcome::LeaseLost);
        let expected = "\
# HELP queue_depth Jobs ready and due, waiting for a worker.
# TYPE queue_depth gauge
queue_depth{queue=\"billing\"} 0
queue_depth{queue=\"reports\"} 2
# HELP queue_oldest_ready_seconds Age of the oldest ready and due job, in seconds.
# TYPE queue_oldest_ready_seconds gauge
queue_oldest_ready_seconds{queue=\"billing\"} 0
queue_oldest_ready_seconds{queue=\"reports\"} 1.5
# HELP queue_dead_jobs Dead-lettered jobs.
# TYPE queue_dead_jobs gauge
queue_dead_jobs{queue=\"billing\"} 0
queue_dead_jobs{queue=\"reports\"} 1
# HELP jobs_total Attempts by how they ended.
# TYPE jobs_total counter
jobs_total{queue=\"billing\",job=\"billing.charge\",outcome=\"ok\"} 2
jobs_total{queue=\"billing\",job=\"billing.charge\",outcome=\"retried\"} 1
jobs_total{queue=\"odd\\\"queue\",job=\"a\\\\b\",outcome=\"dead\"} 1
# HELP job_leases_lost_total Attempts whose claim was lost before they settled.
# TYPE job_leases_lost_total counter
job_leases_lost_total{queue=\"billing\"} 1
";
        assert_eq!(metrics.render_prometheus(), expected);
        assert_eq!(
            metrics.jobs_total("billing", "billing.charge", ExecutionOutcome::Completed),
            2
        );
        assert_eq!(metrics.leases_lost("billing"), 1);
    }

    #[test]
    fn renders_the_outbox_gauges_in_order() {
        let now = chrono::DateTime::parse_from_rfc3339("2030-01-01T09:00:00Z")
            .unwrap()
            .to_utc();
        let stats = OutboxStats {
            backlog: 3,
            oldest_staged_at: Some(now - chrono::Duration::milliseconds(90_500)),
            failing: 1,
            last_error_code: Some("X_DRIVER_UNAVAILABLE".into()),
            refused: 2,
            published: 40,
            lease: Some(OutboxLease {
                holder: "relay:a".into(),
                claimed_at: now - chrono::Duration::milliseconds(2_250),
            }),
        };
        let expected = "\
# HELP outbox_backlog Outbox rows staged and committed, not yet published nor refused.
# TYPE outbox_backlog gauge
outbox_backlog 3
# HELP outbox_oldest_staged_seconds Age of the oldest outbox row not yet published nor refused, in seconds.
# TYPE outbox_oldest_staged_seconds gauge
outbox_oldest_staged_seconds 90.5
# HELP outbox_failing Outbox rows whose last publish failed (retried).
# TYPE outbox_failing gauge
outbox_failing 1
# HELP outbox_refused Outbox rows the job store refused for good.
# TYPE outbox_refused gauge
outbox_refused 2
# HELP outbox_published Published outbox rows kept until the purge.
# TYPE outbox_published gauge
outbox_published 40
# HELP outbox_lease_held 1 while a relay holds the outbox's lease, else 0.
# TYPE outbox_lease_held gauge
outbox_lease_held 1
# HELP outbox_lease_claim_seconds Seconds since the relay holding the outbox's lease last claimed, 0 when none holds it.
# TYPE outbox_lease_claim_seconds gauge
outbox_lease_claim_seconds 2.25
";
        let text = render_outbox(&stats, now);
        assert_eq!(text, expected);
        let written: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .map(|l| l.split(' ').next().unwrap())
            .collect();
        assert_eq!(written, OUTBOX_METRIC_NAMES);
        // An empty outbox, or a row staged by a clock ahead of this one: no negative age.
        let empty = render_outbox(&OutboxStats::default(), now);
        assert!(
            empty.contains("\noutbox_oldest_staged_seconds 0\n"),
            "{empty}"
        );
        assert!(empty.contains("\noutbox_lease_held 0\n"), "{empty}");
        assert!(
            empty.contains("\noutbox_lease_claim_seconds 0\n"),
            "{empty}"
        );
        let ahead = OutboxStats {
            backlog: 1,
            oldest_staged_at: Some(now + chrono::Duration::seconds(5)),
            ..OutboxStats::default()
        };
        assert!(render_outbox(&ahead, now).contains("\noutbox_oldest_staged_seconds 0\n"));
    }

    #[test]
    fn observing_replaces_the_gauges() {
        let metrics = Metrics::new();
        metrics.observe_queues(&[QueueStats {
            queue: "gone".into(),
            ready: 9,
            ..QueueStats::default()
        }]);
        metrics.observe_queues(&[]);
        assert!(!metrics.render_prometheus().contains("gone"));
    }
}
