//! The claim keeper: one task per worker renews every running attempt's claim, and the fleet
//! slots it holds, every heartbeat interval. A renewal answering `false` (cancelled,
//! re-claimed, slot taken), or a whole visibility window with no renewal landing, stops that
//! attempt's run.
//!
//! One task for all of them, not one per attempt: most attempts end long before their first
//! renewal is due, and a task spawned and aborted per attempt was a measurable share of a
//! short job's cost. The renewals still run concurrently, so a slow one holds back no other.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};

use futures::stream::{FuturesUnordered, StreamExt};
// Fx: the keys are this keeper's own counters, and every attempt files and drops one.
use rustc_hash::FxHashMap as HashMap;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::fleet_slots;
use super::WorkerShared;
use crate::clock::{add, Timestamp};
use crate::driver::lease::HeldLease;
use crate::driver::{HeartbeatParams, StepFence};
use crate::run::claim_window::{ClaimWindow, StopReason};

/// The attempts a worker keeps alive, and the task that does it (started with the first).
#[derive(Default)]
pub(crate) struct Keeper {
    state: Mutex<KeeperState>,
    /// Told when an attempt arrives whose renewal is due before the task would wake (shared
    /// with the task, which holds no strong reference to its worker while it waits).
    arrived: Arc<Notify>,
}

#[derive(Default)]
struct KeeperState {
    kept: HashMap<u64, Kept>,
    next_key: u64,
    /// The keeper's task, once started (started again if its runtime ended it).
    task: Option<tokio::task::JoinHandle<()>>,
    /// What the task sleeps until (`None`: until an attempt arrives).
    sleeping_until: Option<Timestamp>,
}

/// One attempt being kept.
struct Kept {
    fence: StepFence,
    /// `None` while its renewal is in flight (the renewal has them).
    held: Option<Vec<HeldLease>>,
    cancel: CancellationToken,
    /// The window its run checks before each step, moved on by each renewal that lands (its
    /// claim, to begin with), and where a lost claim or slot records its reason.
    window: Arc<ClaimWindow>,
    /// When its next renewal is due.
    next: Timestamp,
}

/// Keeps one attempt alive until dropped.
pub(crate) struct KeepGuard {
    shared: Weak<WorkerShared>,
    key: u64,
}

impl Drop for KeepGuard {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.keeper.lock().kept.remove(&self.key);
        }
    }
}

/// What a renewal came to.
enum Renewal {
    Landed(Vec<HeldLease>),
    /// The claim is gone, or a slot is: stop the run.
    Lost(StopReason, Vec<HeldLease>),
    /// It failed; retried within the window.
    Failed(Vec<HeldLease>),
}

type Renewing = Pin<Box<dyn Future<Output = (u64, Timestamp, Renewal)> + Send>>;

impl Keeper {
    fn lock(&self) -> std::sync::MutexGuard<'_, KeeperState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Renews `fence`'s claim and its `held` slots every heartbeat interval until the guard drops;
/// a lost claim or slot records its reason in `window` and fires `cancel`. The first renewal is
/// due one heartbeat interval after the window's last landing (the claim).
pub(crate) fn keep(
    shared: &Arc<WorkerShared>,
    fence: StepFence,
    held: Vec<HeldLease>,
    cancel: CancellationToken,
    window: Arc<ClaimWindow>,
) -> KeepGuard {
    let next = add(window.landed_at(), shared.heartbeat_interval);
    let key = {
        let mut state = shared.keeper.lock();
        let key = state.next_key;
        state.next_key += 1;
        state.kept.insert(
            key,
            Kept {
                fence,
                held: Some(held),
                cancel,
                window,
                next,
            },
        );
        if state.task.as_ref().is_none_or(|t| t.is_finished()) {
            state.sleeping_until = None;
            let arrived = shared.keeper.arrived.clone();
            state.task = Some(tokio::spawn(Box::pin(run(Arc::downgrade(shared), arrived))));
        } else if state.sleeping_until.is_none_or(|at| next < at) {
            // Under load the task already sleeps until an earlier renewal: no wake.
            shared.keeper.arrived.notify_one();
        }
        key
    };
    KeepGuard {
        shared: Arc::downgrade(shared),
        key,
    }
}

/// The keeper's task: sleeps until the next renewal is due, starts every due one, and applies
/// each as it lands. Ends with its worker.
async fn run(shared: Weak<WorkerShared>, arrived: Arc<Notify>) {
    let mut renewing: FuturesUnordered<Renewing> = FuturesUnordered::new();
    loop {
        let Some(worker) = shared.upgrade() else {
            return;
        };
        let clock = worker.jobs.clock().clone();
        let now = clock.now();
        let mut due = Vec::new();
        let next = {
            let mut state = worker.keeper.lock();
            let state = &mut *state;
            for (key, kept) in state.kept.iter_mut() {
                if kept.held.is_some() && kept.next <= now {
                    kept.next = add(now, worker.heartbeat_interval);
                    let held = kept.held.take().unwrap_or_default();
                    due.push((*key, kept.fence.clone(), held));
                }
            }
            let next = state
                .kept
                .values()
                .filter(|k| k.held.is_some())
                .map(|k| k.next)
                .min();
            state.sleeping_until = next;
            next
        };
        for (key, fence, held) in due {
            renewing.push(Box::pin(renew(worker.clone(), key, fence, held, now)));
        }
        let arrival = arrived.notified();
        let sleep = async {
            match next {
                Some(at) => clock.sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        // The worker is not held across the wait: the keeper ends when the worker is dropped.
        drop(worker);
        tokio::select! {
            biased;
            Some((key, at, renewal)) = renewing.next(), if !renewing.is_empty() => {
                let Some(worker) = shared.upgrade() else { return };
                apply(&worker, key, at, renewal);
            }
            _ = sleep => {}
            _ = arrival => {}
        }
    }
}

/// One renewal of one attempt.
async fn renew(
    worker: Arc<WorkerShared>,
    key: u64,
    fence: StepFence,
    mut held: Vec<HeldLease>,
    now: Timestamp,
) -> (u64, Timestamp, Renewal) {
    let window = worker.visibility_timeout;
    let renewal = worker
        .jobs
        .driver()
        .job_heartbeat(&HeartbeatParams {
            job_id: fence.job_id,
            by: fence.by.clone(),
            visibility_timeout: window,
            now,
        })
        .await;
    let outcome = match renewal {
        Ok(true) => {
            let store = worker.jobs.driver().lease_store();
            match fleet_slots::renew(store, &mut held, window, now).await {
                Ok(true) => Renewal::Landed(held),
                Ok(false) => {
                    tracing::warn!(target: "jobs.worker.slot-lost", job_id = %fence.job_id, "a fleet concurrency slot is no longer held; stopping the run");
                    Renewal::Lost(StopReason::SlotLost, held)
                }
                Err(error) => {
                    tracing::warn!(
                        target: "jobs.heartbeat.failed",
                        job_id = %fence.job_id,
                        code = error.code().map(|c| c.as_str()),
                        "a slot renewal failed; retrying within the window"
                    );
                    // The claim itself was renewed.
                    Renewal::Landed(held)
                }
            }
        }
        Ok(false) => {
            tracing::warn!(target: "jobs.lease.lost", job_id = %fence.job_id, "the claim is no longer held; stopping the run");
            Renewal::Lost(StopReason::LeaseLost, held)
        }
        Err(error) => {
            tracing::warn!(
                target: "jobs.heartbeat.failed",
                job_id = %fence.job_id,
                code = error.code().map(|c| c.as_str()),
                "a renewal failed; retrying within the window"
            );
            Renewal::Failed(held)
        }
    };
    (key, now, outcome)
}

/// Applies a renewal that came back to its attempt, if it is still kept.
fn apply(worker: &WorkerShared, key: u64, at: Timestamp, renewal: Renewal) {
    let mut state = worker.keeper.lock();
    let Some(kept) = state.kept.get_mut(&key) else {
        return;
    };
    let lost = match renewal {
        Renewal::Landed(held) => {
            kept.window.landed(at);
            kept.held = Some(held);
            None
        }
        Renewal::Lost(reason, held) => {
            kept.held = Some(held);
            Some(reason)
        }
        Renewal::Failed(held) => {
            kept.held = Some(held);
            // The window's own rule, the one its run checks before each step.
            (!kept.window.holds(worker.jobs.now())).then(|| {
                tracing::error!(
                    target: "jobs.lease.lost",
                    job_id = %kept.fence.job_id,
                    "no renewal landed for a whole visibility window; stopping the run"
                );
                StopReason::LeaseLost
            })
        }
    };
    if let Some(reason) = lost {
        kept.window.stop(reason);
        kept.cancel.cancel();
        // Kept no longer: no renewal for a run that is stopping.
        state.kept.remove(&key);
    }
}
