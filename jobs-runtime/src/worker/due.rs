//! On-time starts: one timer per worker holding the earliest due times it has heard of (its
//! own retries and parks, and the driver's [`WakeSignal::Due`](crate::driver::WakeSignal):
//! delayed enqueues, retries and parks written by any worker of any process), which kicks one
//! pass when the earliest comes due. An idle worker then starts such a job when it is due, not
//! at its next poll, without a statement of its own: the times come with the writes that made
//! them. What was announced before the worker listened (a job delayed by another client, a
//! retry, a parked run) is read once from the store when the worker starts, and again each
//! time its push wake is proven live (a reconnect may have lost announcements):
//! [`read_from_store`], one [`JobDriver::queue_next_due`](crate::driver::JobDriver::queue_next_due)
//! per read. The set is bounded ([`MAX_PENDING`], the earliest kept): a time it drops is left
//! to the poll, as is every time when the driver answers no next due time and has no push
//! wake.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;

use super::WorkerShared;
use crate::clock::Timestamp;
use crate::driver::NextDueParams;

/// Due times one worker keeps at most (the earliest): a later one waits for the poll.
pub const MAX_PENDING: usize = 256;

/// The pending due times and the signal that the earliest changed.
#[derive(Debug, Default)]
pub(crate) struct DueTimes {
    times: Mutex<BTreeSet<Timestamp>>,
    earlier: Notify,
}

impl DueTimes {
    /// Adds a due time; the timer re-arms when it is the new earliest.
    pub fn add(&self, at: Timestamp) {
        // A job blocked on its dependencies is due when they settle, not at its stored time.
        if at >= crate::driver::blocked_until() {
            return;
        }
        let mut times = self.times.lock().unwrap_or_else(|e| e.into_inner());
        if times.len() >= MAX_PENDING && times.last().is_some_and(|last| at >= *last) {
            return;
        }
        let earliest = times.first().is_none_or(|first| at < *first);
        times.insert(at);
        if times.len() > MAX_PENDING {
            times.pop_last();
        }
        drop(times);
        if earliest {
            self.earlier.notify_one();
        }
    }

    /// The earliest pending time.
    fn first(&self) -> Option<Timestamp> {
        self.times
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .first()
            .copied()
    }

    /// Drops every time up to `now`; answers whether any was dropped.
    fn take_due(&self, now: Timestamp) -> bool {
        let mut times = self.times.lock().unwrap_or_else(|e| e.into_inner());
        let later = times.split_off(&next_after(now));
        let due = !times.is_empty();
        *times = later;
        due
    }
}

/// The smallest time after `at`, so a split keeps `at` itself on the due side.
fn next_after(at: Timestamp) -> Timestamp {
    at + chrono::Duration::nanoseconds(1)
}

/// Reads each served queue's next due time from the store and adds it, in a task beside the
/// loop (the first claim never waits on it). A failure is logged and left to the poll: the
/// timer is an optimisation, never the guarantee.
pub(crate) fn read_from_store(shared: &Arc<WorkerShared>) {
    let shared = shared.clone();
    tokio::spawn(async move {
        let params = NextDueParams {
            queues: shared.queues.clone(),
            now: shared.jobs.now(),
        };
        match shared.jobs.driver().queue_next_due(&params).await {
            Ok(dues) => {
                for due in dues {
                    if shared.queues.contains(&due.queue) {
                        shared.dues.add(due.at);
                    }
                }
            }
            Err(error) => tracing::warn!(
                target: "jobs.worker.next-due-failed",
                worker = %shared.id,
                code = error.code().map(|c| c.as_str()),
                "the queues' next due times could not be read; the poll finds those jobs"
            ),
        }
    });
}

/// The timer: sleeps (on the worker's clock) until the earliest due time, then kicks a pass.
/// The run loop aborts it when it stops; it holds the worker only weakly.
pub(crate) fn spawn(shared: &Arc<WorkerShared>) -> tokio::task::JoinHandle<()> {
    let weak: Weak<WorkerShared> = Arc::downgrade(shared);
    let dues = shared.dues.clone();
    let clock = shared.jobs.clock().clone();
    tokio::spawn(async move {
        loop {
            let earlier = dues.earlier.notified();
            tokio::pin!(earlier);
            earlier.as_mut().enable();
            match dues.first() {
                Some(at) => {
                    tokio::select! {
                        biased;
                        _ = clock.sleep_until(at) => {}
                        _ = &mut earlier => continue,
                    }
                }
                None => {
                    earlier.await;
                    continue;
                }
            }
            if dues.take_due(clock.now()) {
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                shared.kick.notify_one();
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn at(second: i64) -> Timestamp {
        Utc.timestamp_opt(1_700_000_000 + second, 0).unwrap()
    }

    #[test]
    fn keeps_the_earliest_times_and_takes_those_due() {
        let dues = DueTimes::default();
        for second in (0..(MAX_PENDING as i64 + 10)).rev() {
            dues.add(at(second));
        }
        assert_eq!(dues.times.lock().unwrap().len(), MAX_PENDING);
        assert_eq!(dues.first(), Some(at(0)));
        assert!(dues.take_due(at(1)));
        assert_eq!(dues.first(), Some(at(2)));
        assert!(!dues.take_due(at(1)));
        dues.add(at(MAX_PENDING as i64 + 100));
        assert_eq!(dues.times.lock().unwrap().len(), MAX_PENDING - 1);
    }
}
