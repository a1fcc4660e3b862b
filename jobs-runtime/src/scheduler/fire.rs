//! An occurrence's jobs, as driver requests. A scheduled fire scopes each job's idempotency key
//! to the occurrence (`<task>:<occurrence ms>:<job's own key>`), so a double fire during a
//! leader handover is absorbed by the queue's dedupe; a manual fire uses the job's plain key.

use crate::clock::Timestamp;
use crate::driver::EnqueueRequest;
use crate::enqueue::EnqueueOptions;
use crate::error::JobError;
use crate::task::{Occurrence, TaskEntry};

/// How the fire keys its jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keys {
    /// `<task>:<occurrence ms>:<job's key>`: a scheduled fire.
    Occurrence,
    /// The job's own key: a manual fire.
    Plain,
}

/// The requests for `task` at `occurrence`, in the order its `entries` declares them.
pub(crate) fn requests(
    task: &TaskEntry,
    occurrence: &Occurrence,
    keys: Keys,
    now: Timestamp,
) -> Result<Vec<EnqueueRequest>, JobError> {
    let options = EnqueueOptions::default();
    task.entries(occurrence)
        .into_iter()
        .map(|entry| {
            let mut prepared = entry.into_prepared()?;
            // An occurrence runs at its own time: its fires dedupe, never debounce.
            prepared.debounce = None;
            if keys == Keys::Occurrence {
                prepared.idempotency_key = format!(
                    "{}:{}:{}",
                    task.descriptor().name,
                    occurrence.timestamp_millis(),
                    prepared.idempotency_key
                );
            }
            prepared.into_request(&options, now)
        })
        .collect()
}
