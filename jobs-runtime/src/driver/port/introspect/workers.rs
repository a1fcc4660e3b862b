//! The worker registry: what a worker announces at each registry heartbeat, the live row an
//! operator reads, and forgetting a worker that stops.

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
    /// The row expires this long after `now` without another heartbeat.
    pub ttl: Duration,
    /// Now.
    pub now: Timestamp,
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
            heartbeat_at: a.now,
            expires_at: crate::clock::add(a.now, a.ttl),
        }
    }
}
