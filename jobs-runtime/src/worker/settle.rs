//! Settling an attempt: ack, nack into the right state, and tell `on_settled` about endings.
//! Settlement is not part of the retry decision: the verdict is decided first, then written.

use super::execute::{ExecutionOutcome, JobExecution};
use super::{SlotRelease, WorkerShared};
use crate::clock::{add, Timestamp};
use crate::driver::{AckParams, ClaimedJob, JobRecord, JobState, NackParams, NackTarget};
use crate::error::{ErrorClass, ErrorCode, JobError};
use crate::registry::{ErasedOutput, ErasedSettled, JobEntry};
use crate::retry::retry_delay;
use crate::settled::{Outcome, ON_SETTLED_ATTEMPTS};

/// What the attempt came to, before anything is written.
pub(crate) enum Verdict {
    Completed(ErasedOutput),
    Suspended(Timestamp),
    Failed(JobError),
    Interrupted,
    LeaseLost,
}

pub(crate) async fn settle(
    shared: &WorkerShared,
    entry: &JobEntry,
    job: &ClaimedJob,
    verdict: Verdict,
    slot: &SlotRelease<'_>,
) -> JobExecution {
    // The body is over: its slot can take the next job while this one settles.
    slot.release();
    let descriptor = entry.descriptor();
    let driver = shared.jobs.driver();
    let now = shared.jobs.now();
    let nack = |target, run_at, counts_as_attempt, error: Option<&JobError>| NackParams {
        job_id: job.id,
        by: job.by.clone(),
        target,
        run_at,
        counts_as_attempt,
        error: error.map(JobError::summary),
        error_code: error
            .and_then(JobError::code)
            .map(|c| c.as_str().to_string()),
        now,
    };

    let (landed, mut execution, ending) = match verdict {
        Verdict::LeaseLost => {
            return JobExecution::new(job, ExecutionOutcome::LeaseLost);
        }
        Verdict::Completed(output) => {
            let ack = AckParams {
                job_id: job.id,
                by: job.by.clone(),
                now,
            };
            let landed = shared.completer.ack(driver, ack).await;
            let execution = JobExecution::new(job, ExecutionOutcome::Completed);
            (
                landed,
                execution,
                Some((Outcome::Completed, Some(output), None)),
            )
        }
        Verdict::Suspended(until) => {
            let landed = driver
                .job_nack(&nack(NackTarget::Park, until, false, None))
                .await;
            let mut execution = JobExecution::new(job, ExecutionOutcome::Suspended);
            execution.resume_at = Some(until);
            (landed, execution, None)
        }
        Verdict::Interrupted => {
            let drained = JobError::new(
                ErrorCode::Draining,
                "the worker shut down before the attempt finished",
            );
            let landed = driver
                .job_nack(&nack(NackTarget::Retry, now, false, Some(&drained)))
                .await;
            let mut execution = JobExecution::new(job, ExecutionOutcome::Interrupted);
            execution.code = Some(ErrorCode::Draining);
            execution.resume_at = Some(now);
            (landed, execution, None)
        }
        Verdict::Failed(error) => {
            let terminal = error.class() == ErrorClass::Terminal;
            let exhausted = job.attempt >= job.max_attempts;
            let mut execution = JobExecution::new(job, ExecutionOutcome::Retried);
            execution.code = error.code();
            if terminal || exhausted {
                let (target, outcome, execution_outcome) = if descriptor.dead_letter {
                    (
                        NackTarget::DeadLetter,
                        Outcome::DeadLettered,
                        ExecutionOutcome::DeadLettered,
                    )
                } else {
                    (
                        NackTarget::Fail,
                        Outcome::Dropped,
                        ExecutionOutcome::Dropped,
                    )
                };
                let stop = if terminal {
                    "not retried: this code is classified terminal"
                } else {
                    "not retried: attempts exhausted"
                };
                let summary = format!("{} — {stop}", error.summary());
                let mut params = nack(target, now, true, Some(&error));
                params.error = Some(summary.clone());
                tracing::warn!(
                    target: "jobs.attempt.failed",
                    job_id = %job.id,
                    job = %job.name,
                    attempt = job.attempt,
                    code = error.code().map(|c| c.as_str()),
                    stop = if terminal { "terminal" } else { "attempts-exhausted" },
                    "the job failed for good"
                );
                let landed = driver.job_nack(&params).await;
                execution.outcome = execution_outcome;
                execution.error = Some(summary.clone());
                (
                    landed,
                    execution,
                    Some((outcome, None, Some((summary, error.code())))),
                )
            } else {
                let delay = retry_delay(&descriptor.retry, job.attempt, error.class());
                let run_at = add(now, delay);
                tracing::info!(
                    target: "jobs.attempt.failed",
                    job_id = %job.id,
                    job = %job.name,
                    attempt = job.attempt,
                    code = error.code().map(|c| c.as_str()),
                    retry_in_ms = delay.as_millis() as u64,
                    "the attempt failed; retrying"
                );
                let landed = driver
                    .job_nack(&nack(NackTarget::Retry, run_at, true, Some(&error)))
                    .await;
                execution.error = Some(error.summary());
                execution.resume_at = Some(run_at);
                (landed, execution, None)
            }
        }
    };

    match landed {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!(target: "jobs.settle.unowned", job_id = %job.id, "the settle matched nothing: the claim was lost");
            execution.outcome = ExecutionOutcome::LeaseLost;
            execution.resume_at = None;
            return execution;
        }
        Err(error) => {
            // The row stays running; its lease lapses and it is delivered again.
            tracing::error!(
                target: "jobs.settle.failed",
                job_id = %job.id,
                code = error.code().map(|c| c.as_str()),
                "the settle could not be written; the job will be delivered again"
            );
            execution.outcome = ExecutionOutcome::LeaseLost;
            execution.resume_at = None;
            return execution;
        }
    }

    if let Some((outcome, result, failure)) = ending {
        let (error, code) = failure.map_or((None, None), |(e, c)| (Some(e), c));
        let settled = ErasedSettled {
            outcome,
            job_id: job.id,
            run_id: job.run_id,
            tenant: entry.run_tenant(&job.input, job.tenant_id.as_ref()),
            input: job.input.clone(),
            result,
            error,
            code,
        };
        execution.on_settled_failed = !deliver_on_settled(entry, settled).await;
    }
    execution
}

/// `when_busy = fail` over a busy key: the run settles `failed`, uncounted, with
/// `X_JOB_KEY_BUSY`; its body never ran. Not a dead letter; `on_settled` hears `refused`.
pub(crate) async fn refuse(
    shared: &WorkerShared,
    entry: &JobEntry,
    job: &ClaimedJob,
    error: JobError,
) -> JobExecution {
    let now = shared.jobs.now();
    let landed = shared
        .jobs
        .driver()
        .job_nack(&NackParams {
            job_id: job.id,
            by: job.by.clone(),
            target: NackTarget::Fail,
            run_at: now,
            counts_as_attempt: false,
            error: Some(error.summary()),
            error_code: error.code().map(|c| c.as_str().to_string()),
            now,
        })
        .await;
    let mut execution = JobExecution::new(job, ExecutionOutcome::Refused);
    execution.code = error.code();
    execution.error = Some(error.summary());
    if !matches!(landed, Ok(true)) {
        execution.outcome = ExecutionOutcome::LeaseLost;
        return execution;
    }
    let settled = ErasedSettled {
        outcome: Outcome::Refused,
        job_id: job.id,
        run_id: job.run_id,
        tenant: entry.run_tenant(&job.input, job.tenant_id.as_ref()),
        input: job.input.clone(),
        result: None,
        error: Some(error.summary()),
        code: error.code(),
    };
    execution.on_settled_failed = !deliver_on_settled(entry, settled).await;
    execution
}

/// Runs the hook up to [`ON_SETTLED_ATTEMPTS`] times back to back. Its failure is logged and
/// reported as `X_JOB_ON_SETTLED_FAILED`, never thrown: the row and outcome stand.
async fn deliver_on_settled(entry: &JobEntry, settled: ErasedSettled) -> bool {
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
            input: settled.input.clone(),
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

/// A row the claim buried after its final attempt's lease lapsed: log it and tell the hook.
pub(crate) async fn announce_exhausted(shared: &WorkerShared, row: JobRecord) {
    tracing::error!(
        target: "jobs.claim.exhausted",
        job_id = %row.id,
        job = %row.name,
        "a job's lease lapsed on its final attempt; buried"
    );
    let Some(entry) = shared.registry.get(&row.name) else {
        return;
    };
    let outcome = if row.state == JobState::Failed {
        Outcome::Dropped
    } else {
        Outcome::DeadLettered
    };
    let settled = ErasedSettled {
        outcome,
        job_id: row.id,
        run_id: row.run_id,
        tenant: entry.run_tenant(&row.input, row.tenant_id.as_ref()),
        input: row.input,
        result: None,
        error: row.last_error,
        code: None,
    };
    deliver_on_settled(entry, settled).await;
}
