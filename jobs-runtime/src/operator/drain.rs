//! [`Operator::drain`]: a queue's lapsed runs dealt with at once, as the next claim would deal
//! with them, without handing any out: the ones on their final attempt buried `dead`, the
//! others back to `ready`, due now. What `jobs drain <queue>` runs.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Operator;
use crate::driver::introspect::{JobListParams, MAX_BULK_ROWS, MAX_JOB_PAGE};
use crate::driver::{
    ClaimIdentity, ClaimParams, JobId, JobState, NackParams, NackTarget, QueueDemand,
};
use crate::error::{ErrorCode, JobError};

/// What [`Operator::drain`] did to one queue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainReport {
    /// The queue.
    pub queue: String,
    /// Runs whose lease lapsed on their final attempt: buried `dead` with
    /// `LEASE_LAPSED_FINAL_ATTEMPT` (never handed out again).
    pub buried: Vec<JobId>,
    /// Runs whose lease lapsed with attempts left: back to `ready`, due now; the lapsed attempt
    /// counts, as a redelivery counts it.
    pub requeued: Vec<JobId>,
    /// Runs under a live lease: left alone.
    pub running: u64,
    /// `true` when the call stopped at [`MAX_BULK_ROWS`] moves: call again.
    pub more: bool,
}

/// The error a run handed back by a drain carries as its `last_error`.
const LEASE_LAPSED_DRAINED: &str = "LEASE_LAPSED: handed back by an operator's drain";

impl Operator<'_> {
    /// Drains `queue`'s lapsed runs (`jobs drain <queue>`): a claim with no free slot buries
    /// every run whose lease lapsed on its final attempt (as a worker's claim would, naming no
    /// `drop_exhausted`, so `dead`), then every other run whose lease lapsed goes back to
    /// `ready`, due now, through the settle fenced on its own claim (so a worker that is in
    /// fact alive loses the claim as it would to a redelivery). Runs under a live lease are
    /// left alone. At most [`MAX_BULK_ROWS`] rows move per call (`more` says to call again).
    /// These are the claim's and the settle's own writes: no history row is appended, as
    /// none is for a claim.
    ///
    /// Refused with `X_JOB_TENANT_MISMATCH` on a client scoped to a tenant (a queue's lapsed
    /// runs span its tenants), `X_NOT_IMPLEMENTED` on a driver without an operator surface.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), jobs::JobError> {
    /// let jobs = jobs::Jobs::memory();
    /// let report = jobs.operator().drain("email").await?;
    /// assert!(report.buried.is_empty() && report.requeued.is_empty());
    /// # Ok(()) }
    /// ```
    pub async fn drain(&self, queue: &str) -> Result<DrainReport, JobError> {
        if self.jobs.tenant().is_some() {
            return Err(JobError::new(
                ErrorCode::JobTenantMismatch,
                "a drain reaches every tenant's runs of the queue, and this client is scoped to one tenant",
            )
            .with_fix("drain from a client not scoped to a tenant (`jobs drain` without --tenant)"));
        }
        crate::limits::check_text(crate::limits::QUEUE, "a drain", queue)?;
        let introspect = self.introspect()?;
        let actor = super::checked_actor(self.jobs.actor())?;
        let now = self.jobs.now();
        let worker: Arc<str> = format!("drain:{}", actor.as_deref().unwrap_or("operator")).into();
        let mut report = DrainReport {
            queue: queue.to_string(),
            ..DrainReport::default()
        };
        let claimed = self
            .jobs
            .driver()
            .job_claim(&ClaimParams {
                demand: vec![QueueDemand {
                    queue: queue.to_string(),
                    limit: 0,
                }],
                worker_id: worker,
                visibility_timeout: Duration::ZERO,
                drop_exhausted: Vec::new(),
                fair_after: String::new(),
                now,
            })
            .await?;
        report.buried = claimed.exhausted.iter().map(|row| row.id).collect();
        let mut after = None;
        'pages: loop {
            let page = introspect
                .job_list(&JobListParams {
                    state: Some(JobState::Running),
                    queue: Some(queue.to_string()),
                    after: after.take(),
                    limit: Some(MAX_JOB_PAGE),
                    ..JobListParams::default()
                })
                .await?;
            for summary in &page.jobs {
                let Some(row) = self.jobs.job(summary.id).await? else {
                    continue;
                };
                let lapsed = row.state == JobState::Running
                    && row.visible_at.is_some_and(|until| until <= now);
                let (true, Some(holder)) = (lapsed, row.claimed_by.as_deref()) else {
                    report.running += u64::from(row.state == JobState::Running);
                    continue;
                };
                if report.buried.len() + report.requeued.len() >= MAX_BULK_ROWS as usize {
                    report.more = true;
                    break 'pages;
                }
                let landed = self
                    .jobs
                    .driver()
                    .job_nack(&NackParams {
                        job_id: row.id,
                        by: ClaimIdentity {
                            worker_id: holder.into(),
                            claim: row.claims,
                        },
                        target: NackTarget::Retry,
                        run_at: now,
                        counts_as_attempt: true,
                        error: Some(LEASE_LAPSED_DRAINED.to_string()),
                        error_code: None,
                        now,
                    })
                    .await?;
                // Not landed: its worker settled or renewed it meanwhile.
                if landed {
                    report.requeued.push(row.id);
                }
            }
            match page.after {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        if !report.requeued.is_empty() {
            self.jobs.local_wake().notify_waiters();
        }
        Ok(report)
    }
}
