//! Telling a job's one `on_settled` hook about an ending: an attempt's, once the settle stage's
//! write landed, or a row a claim buried. Up to [`ON_SETTLED_ATTEMPTS`] tries in process.

use super::admit::Declared;
use super::WorkerShared;
use crate::driver::{ClaimedJob, JobRecord, JobState};
use crate::error::{ErrorCode, JobError};
use crate::registry::{ErasedOutput, ErasedSettled, JobEntry};
use crate::settled::{Outcome, ON_SETTLED_ATTEMPTS};

/// An ending `on_settled` is told about, once the write landed.
pub(crate) struct HookEnding {
    pub outcome: Outcome,
    pub result: Option<ErasedOutput>,
    pub error: Option<String>,
    pub code: Option<ErrorCode>,
}

/// Tells the job's `on_settled` hook (if it has one) about an ending.
pub(crate) async fn tell(job: &ClaimedJob, declared: Declared, ending: HookEnding) -> bool {
    deliver_on_settled(
        &declared.entry,
        ErasedSettled {
            outcome: ending.outcome,
            job_id: job.id,
            run_id: job.run_id,
            tenant: declared.tenant,
            input: &job.input,
            result: ending.result,
            error: ending.error,
            code: ending.code,
        },
    )
    .await
}

/// Runs the hook up to [`ON_SETTLED_ATTEMPTS`] times back to back. Its failure is logged and
/// reported as `X_JOB_ON_SETTLED_FAILED`, never thrown: the row and outcome stand.
async fn deliver_on_settled(entry: &JobEntry, settled: ErasedSettled<'_>) -> bool {
    if !entry.descriptor().on_settled {
        return true;
    }
    // The in-process result can be handed over once; later tries see `None`.
    let mut result = settled.result;
    let mut last = None;
    for _ in 0..ON_SETTLED_ATTEMPTS {
        let attempt = ErasedSettled {
            outcome: settled.outcome,
            job_id: settled.job_id,
            run_id: settled.run_id,
            tenant: settled.tenant.clone(),
            input: settled.input,
            result: result.take(),
            error: settled.error.clone(),
            code: settled.code,
        };
        match entry.on_settled(attempt).await {
            Ok(()) => return true,
            Err(error) => last = Some(error),
        }
    }
    tracing::error!(
        target: "jobs.on-settled.failed",
        code = ErrorCode::JobOnSettledFailed.as_str(),
        job_id = %settled.job_id,
        job = entry.descriptor().name,
        cause = last.as_ref().and_then(JobError::code).map(|c| c.as_str()),
        "the on_settled hook failed on every try"
    );
    false
}

/// Rows a claim buried after their final attempt's lease lapsed: count them, log them, and
/// tell each one's hook. Nothing is written: the claim already settled them.
pub(crate) async fn bury(shared: &WorkerShared, buried: Vec<JobRecord>) {
    for row in buried {
        shared.jobs.metrics().record_buried(&row);
        tracing::error!(
            target: "jobs.claim.exhausted",
            job_id = %row.id,
            job = %row.name,
            "a job's lease lapsed on its final attempt; buried"
        );
        let Some(entry) = shared.registry.get(&row.name) else {
            continue;
        };
        if !entry.descriptor().on_settled {
            continue;
        }
        let outcome = if row.state == JobState::Failed {
            Outcome::Dropped
        } else {
            Outcome::DeadLettered
        };
        let settled = ErasedSettled {
            outcome,
            job_id: row.id,
            run_id: row.run_id,
            tenant: entry.parse(&row.input, row.tenant_id.as_ref()).tenant,
            input: &row.input,
            result: None,
            error: row.last_error,
            code: None,
        };
        deliver_on_settled(entry, settled).await;
    }
}
