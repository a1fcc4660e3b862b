//! Stage 1, claim: ONE driver call over every queue with a free slot takes as many due jobs as
//! there are free slots, and reserves a slot for each.

use std::sync::atomic::Ordering;

use super::WorkerShared;
use crate::driver::records::fair_cursor_next;
use crate::driver::{ClaimParams, ClaimedJob, JobRecord, QueueDemand};
use crate::error::JobError;

/// A claimed job and the worker slot reserved for it.
pub(crate) struct Claimed {
    /// The row, as the claim returned it.
    pub job: ClaimedJob,
    /// Its slot; the settle stage gives it back.
    pub slot: Slot,
}

/// What one claim brought back.
pub(crate) struct Claims {
    /// The jobs to run, each with its slot reserved.
    pub claimed: Vec<Claimed>,
    /// Rows the claim buried because their lease lapsed on the final attempt.
    pub buried: Vec<JobRecord>,
}

/// A reserved worker slot. Not `Clone`, and [`Slot::release`] takes it by value: a slot is
/// given back exactly once.
#[must_use = "a claimed job's slot is given back by the settle stage"]
pub(crate) struct Slot {
    _reserved: (),
}

impl Slot {
    /// Frees the slot of `queue` and kicks a pass to refill it.
    pub(crate) fn release(self, shared: &WorkerShared, queue: &str) {
        {
            let mut in_flight = shared.in_flight.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(used) = in_flight.get_mut(queue) {
                *used = used.saturating_sub(1);
            }
        }
        shared.kick.notify_one();
    }
}

/// Claims for every queue with a free slot, in one driver call, and reserves the slots it
/// fills. No free slot: no statement.
pub(crate) async fn claim(shared: &WorkerShared) -> Result<Claims, JobError> {
    let demand: Vec<QueueDemand> = {
        let in_flight = shared.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        shared
            .queues
            .iter()
            .filter_map(|queue| {
                let used = in_flight.get(queue).copied().unwrap_or(0);
                let free = shared.slots[queue].saturating_sub(used);
                (free > 0).then(|| QueueDemand {
                    queue: queue.clone(),
                    limit: free,
                })
            })
            .collect()
    };
    if demand.is_empty() {
        return Ok(Claims {
            claimed: Vec::new(),
            buried: Vec::new(),
        });
    }
    let params = ClaimParams {
        demand,
        worker_id: shared.id.clone(),
        visibility_timeout: shared.visibility_timeout,
        drop_exhausted: shared
            .registry
            .entries()
            .filter(|e| !e.descriptor().dead_letter)
            .map(|e| e.descriptor().name.to_string())
            .collect(),
        fair_after: shared
            .fair_cursor
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
        now: shared.jobs.now(),
    };
    shared.stats.claims.fetch_add(1, Ordering::Relaxed);
    let result = shared.jobs.driver().job_claim(&params).await?;
    {
        // Copied only when it moved (one tenant, or none: it never does).
        let next = fair_cursor_next(&params.fair_after, &result.jobs);
        let mut cursor = shared.fair_cursor.lock().unwrap_or_else(|e| e.into_inner());
        if *cursor != next {
            *cursor = next.to_string();
        }
    }
    {
        let mut in_flight = shared.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        for job in &result.jobs {
            // The queue's entry is made once: later claims count in place.
            match in_flight.get_mut(&*job.queue) {
                Some(used) => *used += 1,
                None => {
                    in_flight.insert(job.queue.to_string(), 1);
                }
            }
        }
    }
    super::count_in_flight(shared, |total| *total += result.jobs.len());
    let claimed = result
        .jobs
        .into_iter()
        .map(|job| Claimed {
            job,
            slot: Slot { _reserved: () },
        })
        .collect();
    Ok(Claims {
        claimed,
        buried: result.exhausted,
    })
}
