//! The schedule without a running scheduler: a configured cron and zone checked, a task's
//! next run, and a task fired by hand. Apart from the scheduler's rounds because none of it
//! needs a leader or a lease.

use crate::client::{Enqueued, Jobs};
use crate::clock::Timestamp;
use crate::error::JobError;
use crate::task::{Occurrence, Task, TaskEntry};

use super::cron::{self, Cron};
use super::fire::{self, Keys};

/// Checks a cron and a zone that come from configuration rather than a `#[task]` literal, with
/// the same rules the macro applies at compile time: a standard 5-field cron that parses, and
/// an IANA zone (`X_INVARIANT`, with the `America/Bogota` style suggestion). Answers the next
/// occurrence after `from`, if any.
///
/// ```
/// use jobs::check_schedule;
///
/// let now = chrono::Utc::now();
/// assert!(check_schedule("0 9 * * 1-5", "Europe/Paris", now).is_ok());
/// assert!(check_schedule("0 0 9 * * *", "Europe/Paris", now).is_err()); // six fields
/// assert!(check_schedule("0 9 * * *", "Bogota", now).is_err());         // not an IANA zone
/// ```
pub fn check_schedule(
    cron: &str,
    tz: &str,
    from: Timestamp,
) -> Result<Option<Timestamp>, JobError> {
    Ok(cron::Cron::parse("configuration", cron, tz)?.next_after(from))
}

/// The next occurrence of task `T` strictly after `from`, in its zone. Needs no scheduler;
/// `None` when the schedule has no later occurrence (or its cron or zone is refused).
///
/// ```
/// use jobs::{CatchUp, Entry, Occurrence, Task, TaskDescriptor};
///
/// struct Nightly;
/// impl Task for Nightly {
///     const DESCRIPTOR: TaskDescriptor = TaskDescriptor::new("nightly", "30 1 * * *", "Europe/Paris");
///     fn entries(_at: &Occurrence) -> Vec<Entry> { Vec::new() }
/// }
///
/// let from = "2030-01-01T00:00:00Z".parse().unwrap();
/// let next = jobs::next_run::<Nightly>(from).unwrap();
/// assert_eq!(next.to_rfc3339(), "2030-01-01T00:30:00+00:00"); // 01:30 in Paris
/// ```
pub fn next_run<T: Task>(from: Timestamp) -> Option<Timestamp> {
    next_after(&T::DESCRIPTOR, from)
}

pub(crate) fn next_after(d: &crate::task::TaskDescriptor, from: Timestamp) -> Option<Timestamp> {
    Cron::parse(d.name, d.cron, d.tz).ok()?.next_after(from)
}

/// The next `count` occurrences of a declared task strictly after `from`, in order (fewer when
/// its schedule ends); `X_INVARIANT` for a refused cron or zone. `jobs tasks show`.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn next_fires(
    d: &crate::task::TaskDescriptor,
    from: Timestamp,
    count: usize,
) -> Result<Vec<Timestamp>, JobError> {
    let cron = Cron::parse(d.name, d.cron, d.tz)?;
    let mut fires = Vec::with_capacity(count);
    let mut at = from;
    while fires.len() < count {
        let Some(next) = cron.next_after(at) else {
            break;
        };
        fires.push(next);
        at = next;
    }
    Ok(fires)
}

/// Fires task `T` now, by hand: its entries for the occurrence "now", enqueued with each job's
/// plain idempotency key (a scheduled fire scopes them to the occurrence). One answer per entry.
/// The client's actor ([`Jobs::acting_as`]) is each job's actor: who fired it.
pub async fn fire_now<T: Task>(jobs: &Jobs) -> Result<Vec<Enqueued>, JobError> {
    fire_entry_now(jobs, &TaskEntry::of::<T>()).await
}

/// [`fire_now`] for a registered task (the dashboard's "run now").
#[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
pub(crate) async fn fire_entry_now(
    jobs: &Jobs,
    entry: &TaskEntry,
) -> Result<Vec<Enqueued>, JobError> {
    let d = entry.descriptor();
    let tz = cron::parse_tz(d.name, d.tz)?;
    let now = jobs.now();
    let mut requests = fire::requests(entry, &Occurrence::new(now, tz), Keys::Plain, now)?;
    let actor = crate::limits::checked_operator_actor(jobs.actor())?;
    for request in &mut requests {
        request.actor = request.actor.take().or_else(|| actor.clone());
    }
    if requests.is_empty() {
        return Ok(Vec::new());
    }
    let results = jobs.driver().job_enqueue_many(&requests).await?;
    jobs.local_wake().notify_waiters();
    Ok(results)
}
