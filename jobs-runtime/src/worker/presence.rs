//! A worker's registry row: announced when its loop starts (with the settings the store does
//! not otherwise know: its fleet-wide queue limits), refreshed at most once per
//! heartbeat interval by the loop (in a task beside it), forgotten when it stops. The row
//! expires one visibility timeout after its last refresh, so a killed worker drops out of
//! `workers()` on its own.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use super::WorkerShared;
use crate::clock::{add, Timestamp};
use crate::driver::introspect::WorkerForgetParams;
use crate::driver::introspect::{
    WorkerAnnounce, WorkerQueueLimits, WorkerQueueRate, WorkerSettings, MAX_WORKER_IN_FLIGHT,
};
use crate::driver::{JobId, RELEASE_SWEEP_EVERY};

/// What the registry row is made of, kept by the worker.
#[derive(Debug, Default)]
pub(crate) struct Presence {
    running: Mutex<BTreeSet<JobId>>,
    /// `(started_at, last refresh)`, once announced.
    announced: Mutex<Option<(Timestamp, Timestamp)>>,
    /// When the beat last asked the driver to judge what a dead process left unjudged.
    swept: Mutex<Option<Timestamp>>,
}

impl Presence {
    /// A claimed job starts running here.
    pub(crate) fn begin(&self, id: JobId) {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id);
    }

    /// It stopped running here.
    pub(crate) fn end(&self, id: JobId) {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }
}

/// Starts the row's write in a task of its own when it is due and no earlier one is still under
/// way, so the loop never waits on it: a pass that a wake asked for claims at once, and the
/// write's commit (once per heartbeat interval) is never part of a job's pickup.
pub(crate) fn beat_beside(shared: &Arc<WorkerShared>, under_way: &mut Option<JoinHandle<()>>) {
    if under_way.as_ref().is_some_and(|beat| !beat.is_finished()) {
        return;
    }
    let Some(started_at) = due(shared) else {
        return;
    };
    let shared = shared.clone();
    *under_way = Some(tokio::spawn(async move { beat(&shared, started_at).await }));
}

/// When the row is due (the first time, then once per heartbeat interval): the worker's start.
fn due(shared: &WorkerShared) -> Option<Timestamp> {
    shared.jobs.driver().introspect()?;
    let now = shared.jobs.now();
    let announced = shared
        .presence
        .announced
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    match *announced {
        Some((_, last)) if now < add(last, shared.heartbeat_interval) => None,
        Some((started, _)) => Some(started),
        None => Some(now),
    }
}

/// Writes the worker's row, which [`due`] found due. A failure is logged and retried at the
/// next pass: the registry is a view, never a gate.
async fn beat(shared: &WorkerShared, started_at: Timestamp) {
    let Some(port) = shared.jobs.driver().introspect() else {
        return;
    };
    let now = shared.jobs.now();
    let (in_flight, count) = {
        let running = shared
            .presence
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let ids: Vec<JobId> = running.iter().take(MAX_WORKER_IN_FLIGHT).copied().collect();
        (ids, running.len())
    };
    let announce = WorkerAnnounce {
        id: shared.id.to_string(),
        host: host(),
        started_at,
        queues: shared.queues.clone(),
        slots: shared.slots.values().sum(),
        in_flight,
        in_flight_count: u32::try_from(count).unwrap_or(u32::MAX),
        settings: settings(shared),
        ttl: shared.visibility_timeout,
        now,
    };
    sweep_releases(shared, now).await;
    match port.worker_announce(&announce).await {
        Ok(()) => {
            *shared
                .presence
                .announced
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some((started_at, now));
        }
        Err(error) => tracing::warn!(
            target: "jobs.worker.registry-failed",
            worker = %shared.id,
            code = error.code().map(|c| c.as_str()),
            "the worker registry row could not be written; retrying at the next pass"
        ),
    }
}

/// Asks the driver, at the first beat and about once a minute after
/// ([`RELEASE_SWEEP_EVERY`]), to judge the dependents a dead process left unjudged between a
/// settle and its release pass. A failure is logged and tried again at the next sweep.
async fn sweep_releases(shared: &WorkerShared, now: Timestamp) {
    {
        let mut swept = shared
            .presence
            .swept
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if swept.is_some_and(|last| now < add(last, RELEASE_SWEEP_EVERY)) {
            return;
        }
        *swept = Some(now);
    }
    if let Err(error) = shared.jobs.driver().job_release_pending(now).await {
        tracing::warn!(
            target: "jobs.worker.release-sweep-failed",
            worker = %shared.id,
            code = error.code().map(|c| c.as_str()),
            "judging dependents left unjudged failed; trying again at the next sweep"
        );
    }
}

/// What the row tells of the worker's settings: its fleet-wide limits per queue, which the
/// store counts but does not know (the operator sees them, and a queue whose workers disagree).
fn settings(shared: &WorkerShared) -> WorkerSettings {
    WorkerSettings {
        queue_limits: shared
            .queue_limits
            .iter()
            .map(|(queue, limits)| WorkerQueueLimits {
                queue: queue.clone(),
                concurrency: limits.concurrency_limit(),
                rate: limits.rate_limit().map(|(limit, per)| WorkerQueueRate {
                    limit,
                    per_ms: u64::try_from(per.as_millis()).unwrap_or(u64::MAX),
                }),
            })
            .collect(),
    }
}

/// Deletes the worker's row (a graceful stop).
pub(crate) async fn forget(shared: &WorkerShared) {
    let Some(port) = shared.jobs.driver().introspect() else {
        return;
    };
    if let Err(error) = port
        .worker_forget(&WorkerForgetParams { id: &shared.id })
        .await
    {
        tracing::warn!(
            target: "jobs.worker.registry-failed",
            worker = %shared.id,
            code = error.code().map(|c| c.as_str()),
            "the worker registry row could not be deleted; it expires on its own"
        );
    }
}

/// The host name, for the registry row.
fn host() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}
