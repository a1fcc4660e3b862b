//! A claim: the demand per queue, the fence a claim sets (who holds it), the jobs it hands
//! the worker, the tenant-fairness cursor a claimer carries from one claim to the next, and
//! the next due time a starting worker reads to arm its due timer.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Timestamp;

use super::{JobId, JobRecord, RunId};

/// How many jobs a claim may take from one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueDemand {
    /// The queue.
    pub queue: String,
    /// Free slots for it.
    pub limit: u32,
}

/// A claim's parameters.
#[derive(Debug, Clone)]
pub struct ClaimParams {
    /// Per queue, how many to take. Empty is refused (`X_JOB_CLAIM_QUEUES_EMPTY`).
    pub demand: Vec<QueueDemand>,
    /// The claiming worker (shared: every claim and fence of a worker names the same one).
    pub worker_id: Arc<str>,
    /// How long a claimed job stays invisible without a heartbeat.
    pub visibility_timeout: Duration,
    /// Job names whose lapsed final attempts are buried `failed` (they have `dead_letter = false`).
    pub drop_exhausted: Vec<String>,
    /// The claimer's fairness cursor: the tenant its previous claim served last ("" before its
    /// first). A driver that visits a bounded number of tenants per claim starts its walk after
    /// it and wraps around; [`fair_cursor_after`] moves it. A driver whose claim visits every
    /// tenant may ignore it.
    pub fair_after: String,
    /// The clock's now.
    pub now: Timestamp,
}

/// Ask each queue for its next due time ([`JobDriver::queue_next_due`](crate::driver::JobDriver::queue_next_due)).
#[derive(Debug, Clone)]
pub struct NextDueParams {
    /// The queues, each answered on its own.
    pub queues: Vec<String>,
    /// The clock's now: only run times after it are answered.
    pub now: Timestamp,
}

/// A queue's earliest run time after `now` among its rows waiting for their time: a delayed
/// row, a ready row backing off (a retry, a run handed back until later) and a suspended row
/// (a sleep, an event wait's timeout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueDue {
    /// The queue.
    pub queue: String,
    /// When its earliest such row comes due.
    pub at: Timestamp,
}

/// Tenants a driver may walk per queue to answer
/// [`JobDriver::queue_next_due`](crate::driver::JobDriver::queue_next_due) when its store
/// orders a queue's rows by tenant before run time (the SQL stores' fair index): a queue with
/// more answers the earliest among the first this many tenants, and the poll covers the rest.
pub const NEXT_DUE_TENANTS: u32 = 1024;

/// The fairness cursor after a claim that started at `cursor` and took `claimed`: the last
/// tenant the walk served, i.e. the largest served tenant past the cursor, or, when the walk
/// wrapped around, the largest at or before it. Unchanged when nothing was claimed.
pub fn fair_cursor_after(cursor: &str, claimed: &[ClaimedJob]) -> String {
    fair_cursor_next(cursor, claimed).to_string()
}

/// [`fair_cursor_after`], borrowed: the worker copies it only when it moved.
pub fn fair_cursor_next<'a>(cursor: &'a str, claimed: &'a [ClaimedJob]) -> &'a str {
    let (mut wrapped, mut ahead): (Option<&str>, Option<&str>) = (None, None);
    for tenant in claimed.iter().map(|j| j.tenant_id.as_deref().unwrap_or("")) {
        let side = if tenant <= cursor {
            &mut wrapped
        } else {
            &mut ahead
        };
        *side = (*side).max(Some(tenant));
    }
    wrapped.or(ahead).unwrap_or(cursor)
}

/// Who holds a claim: the fence every settling write is checked against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClaimIdentity {
    /// The worker that claimed (shared with its claim: a fence is copied into every settle,
    /// heartbeat and step write of an attempt).
    pub worker_id: Arc<str>,
    /// The row's claim ordinal at that claim (never reset).
    pub claim: i64,
}

/// A claimed job, handed to the worker.
///
/// Its name, queue and input are shared, not owned: a driver that keeps them in memory hands
/// them over without a copy, and the worker's stages and telemetry take them by reference count.
#[derive(Debug, Clone)]
pub struct ClaimedJob {
    /// The job.
    pub id: JobId,
    /// The run.
    pub run_id: RunId,
    /// Its durable name.
    pub name: Arc<str>,
    /// Its queue.
    pub queue: Arc<str>,
    /// The stored input.
    pub input: Arc<serde_json::Value>,
    /// This attempt's number, from 1.
    pub attempt: u32,
    /// Attempts allowed.
    pub max_attempts: u32,
    /// The row's tenant.
    pub tenant_id: Option<String>,
    /// The fence.
    pub by: ClaimIdentity,
    /// Until when the claim holds without a heartbeat.
    pub visible_at: Timestamp,
    /// The enqueue's W3C traceparent (shared, as the name).
    pub traceparent: Option<Arc<str>>,
    /// Who asked for the job, when its enqueue named one (a span field of the run).
    pub actor: Option<String>,
    /// Whether the run has step records (a first attempt has none, and skips reading them).
    pub has_steps: bool,
    /// When the job was enqueued (what `expires_in` counts from).
    pub created_at: Timestamp,
}

impl ClaimedJob {
    /// The job a claim just marked running, read back from its row: `visible_at` is the lease
    /// the claim set, `has_steps` whether the run has step records yet.
    pub fn from_claimed_row(
        record: JobRecord,
        has_steps: bool,
        params: &ClaimParams,
        visible_at: Timestamp,
    ) -> Self {
        ClaimedJob {
            id: record.id,
            run_id: record.run_id,
            name: record.name.into(),
            queue: record.queue.into(),
            input: Arc::new(record.input),
            attempt: record.attempt,
            max_attempts: record.max_attempts,
            tenant_id: record.tenant_id,
            by: ClaimIdentity {
                worker_id: params.worker_id.clone(),
                claim: record.claims,
            },
            visible_at,
            traceparent: record.traceparent.map(Arc::from),
            actor: record.actor,
            has_steps,
            created_at: record.created_at,
        }
    }
}

/// What a claim answers.
#[derive(Debug, Clone, Default)]
pub struct ClaimResult {
    /// The jobs to run.
    pub jobs: Vec<ClaimedJob>,
    /// Rows the claim buried because their lease lapsed on the final attempt.
    pub exhausted: Vec<JobRecord>,
}

/// `last_error` of a row buried by the claim after its final attempt's lease lapsed.
pub const LEASE_LAPSED_FINAL_ATTEMPT: &str = "LEASE_LAPSED_FINAL_ATTEMPT";

#[cfg(test)]
mod tests {
    use super::*;

    fn served(tenants: &[&str]) -> Vec<ClaimedJob> {
        tenants
            .iter()
            .map(|t| ClaimedJob {
                id: uuid::Uuid::nil(),
                run_id: uuid::Uuid::nil(),
                name: "j".into(),
                queue: "q".into(),
                input: Arc::new(serde_json::Value::Null),
                attempt: 1,
                max_attempts: 1,
                tenant_id: Some((*t).to_string()),
                by: ClaimIdentity {
                    worker_id: "w".into(),
                    claim: 1,
                },
                visible_at: chrono::DateTime::UNIX_EPOCH,
                traceparent: None,
                actor: None,
                has_steps: false,
                created_at: chrono::DateTime::UNIX_EPOCH,
            })
            .collect()
    }

    #[test]
    fn the_fair_cursor_moves_to_the_last_tenant_the_walk_served() {
        assert_eq!(fair_cursor_after("", &served(&["b", "a", "c"])), "c");
        assert_eq!(
            fair_cursor_after("b", &served(&["c", "d"])),
            "d",
            "ahead only"
        );
        assert_eq!(
            fair_cursor_after("c", &served(&["d", "e", "a", "b"])),
            "b",
            "wrapped around: the largest at or before the cursor"
        );
        assert_eq!(
            fair_cursor_after("c", &[]),
            "c",
            "nothing claimed: unchanged"
        );
    }
}
