//! The worker registry: what a worker announces at each registry heartbeat (with the settings
//! the store does not otherwise know, such as its fleet-wide queue limits), the live row an
//! operator reads, forgetting a worker that stops, and the queues whose workers announce
//! different limits.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::driver::records::JobId;

/// The most in-flight job ids a worker registry row carries.
pub const MAX_WORKER_IN_FLIGHT: usize = 100;

/// What a worker announces (and re-announces at every registry heartbeat).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerAnnounce {
    /// The worker's id.
    pub id: String,
    /// The host it runs on.
    pub host: String,
    /// When it started.
    pub started_at: Timestamp,
    /// The queues it serves.
    pub queues: Vec<String>,
    /// Its slots, all queues together.
    pub slots: u32,
    /// Jobs it runs now (at most [`MAX_WORKER_IN_FLIGHT`] ids are kept).
    pub in_flight: Vec<JobId>,
    /// How many it runs now (may exceed the ids kept).
    pub in_flight_count: u32,
    /// The settings it runs with that the store does not otherwise know.
    pub settings: WorkerSettings,
    /// The row expires this long after `now` without another heartbeat.
    pub ttl: Duration,
    /// Now.
    pub now: Timestamp,
}

/// The settings a worker announces with its registry row, so an operator sees what each worker
/// runs with: stored as one JSON value, so a later setting needs no new column. A row written
/// before a setting existed reads it as its default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerSettings {
    /// The fleet-wide limits it enforces per queue (`WorkerBuilder::queue_limits`), by queue
    /// name; a queue it serves without any is left out.
    pub queue_limits: Vec<WorkerQueueLimits>,
}

/// One queue's fleet-wide limits as a worker announces them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WorkerQueueLimits {
    /// The queue.
    pub queue: String,
    /// The cap on the queue's runs in flight, fleet-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// The limit on the queue's starts per window, fleet-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<WorkerQueueRate>,
}

/// A queue's start limit: at most `limit` starts in any window of `per_ms` milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WorkerQueueRate {
    /// Starts per window.
    pub limit: u32,
    /// The window, in milliseconds.
    pub per_ms: u64,
}

impl std::fmt::Display for WorkerQueueLimits {
    /// The limits without the queue's name: `10 in flight, 100 per 1m`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::with_capacity(2);
        if let Some(cap) = self.concurrency {
            parts.push(format!("{cap} in flight"));
        }
        if let Some(rate) = self.rate {
            let per = crate::duration::shown(Duration::from_millis(rate.per_ms));
            parts.push(format!("{} per {per}", rate.limit));
        }
        if parts.is_empty() {
            return f.write_str("no limit");
        }
        f.write_str(&parts.join(", "))
    }
}

/// A live worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerRow {
    /// The worker's id.
    pub id: String,
    /// The host it runs on.
    pub host: String,
    /// When it started.
    pub started_at: Timestamp,
    /// The queues it serves.
    pub queues: Vec<String>,
    /// Its slots.
    pub slots: u32,
    /// Jobs it ran at its last heartbeat (at most [`MAX_WORKER_IN_FLIGHT`]).
    pub in_flight: Vec<JobId>,
    /// How many it ran at its last heartbeat.
    pub in_flight_count: u32,
    /// The settings it announced (a row written before they were announced has the default).
    #[serde(default)]
    pub settings: WorkerSettings,
    /// Its last heartbeat.
    pub heartbeat_at: Timestamp,
    /// When the row expires without another one.
    pub expires_at: Timestamp,
}
/// Delete a worker's registry row.
#[derive(Debug, Clone, Copy)]
pub struct WorkerForgetParams<'a> {
    /// The worker.
    pub id: &'a str,
}

/// List the live workers.
#[derive(Debug, Clone, Copy)]
pub struct WorkerListParams {
    /// Now, on the injected clock.
    pub now: Timestamp,
}

impl WorkerRow {
    /// The row an announcement files: its in-flight ids cut to [`MAX_WORKER_IN_FLIGHT`], heard
    /// at its `now`, expiring one `ttl` later. The stores that keep the row whole (memory,
    /// Redis) build it here; the SQL stores write the same columns.
    pub fn announced(a: &WorkerAnnounce) -> WorkerRow {
        WorkerRow {
            id: a.id.clone(),
            host: a.host.clone(),
            started_at: a.started_at,
            queues: a.queues.clone(),
            slots: a.slots,
            in_flight: a
                .in_flight
                .iter()
                .take(MAX_WORKER_IN_FLIGHT)
                .copied()
                .collect(),
            in_flight_count: a.in_flight_count,
            settings: a.settings.clone(),
            heartbeat_at: a.now,
            expires_at: crate::clock::add(a.now, a.ttl),
        }
    }
}

/// A queue whose live workers do not all announce the same fleet-wide limits: the store counts
/// one cap and one rate per queue, so a worker with other values (or none) lets more runs or
/// starts through than the others allow. Every worker of a queue must be given the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueLimitsSpread {
    /// The queue.
    pub queue: String,
    /// Each distinct announcement, with the workers that made it, most workers first.
    pub announced: Vec<LimitsAnnounced>,
}

/// One announcement of a queue's limits and who made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsAnnounced {
    /// The limits (`None`: the workers serve the queue without any).
    pub limits: Option<WorkerQueueLimits>,
    /// The workers' ids, in id order.
    pub workers: Vec<String>,
}

/// The queues whose live workers announce different limits (a worker serving a queue without
/// limits differs from one with them), in queue order; a queue that no worker limits, or that
/// every worker limits alike, is left out.
pub fn queue_limits_spread(workers: &[WorkerRow]) -> Vec<QueueLimitsSpread> {
    use std::collections::BTreeMap;
    let mut by_queue: BTreeMap<&str, BTreeMap<Option<&WorkerQueueLimits>, Vec<String>>> =
        BTreeMap::new();
    for worker in workers {
        for queue in &worker.queues {
            let limits = worker
                .settings
                .queue_limits
                .iter()
                .find(|l| l.queue == *queue);
            by_queue
                .entry(queue.as_str())
                .or_default()
                .entry(limits)
                .or_default()
                .push(worker.id.clone());
        }
    }
    by_queue
        .into_iter()
        .filter(|(_, seen)| seen.len() > 1)
        .map(|(queue, seen)| {
            let mut announced: Vec<LimitsAnnounced> = seen
                .into_iter()
                .map(|(limits, mut workers)| {
                    workers.sort();
                    LimitsAnnounced {
                        limits: limits.cloned(),
                        workers,
                    }
                })
                .collect();
            announced.sort_by_key(|a| std::cmp::Reverse(a.workers.len()));
            QueueLimitsSpread {
                queue: queue.to_string(),
                announced,
            }
        })
        .collect()
}
