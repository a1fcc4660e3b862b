//! One attempt of one claimed job: load the run, keep the claim alive, race the body against
//! its timeout and its cancellation, then hand the verdict to `settle`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::admit::{self, Admission};
use super::settle::{self, Verdict};
use super::{SlotRelease, WorkerShared};
use crate::clock::{add, Timestamp};
use crate::driver::lease::HeldLease;
use crate::driver::{ClaimedJob, HeartbeatParams, JobId, NackParams, NackTarget, RunId, StepFence};
use crate::error::{ErrorCode, JobError};
use crate::registry::JobEntry;
use crate::run::{Run, RunSeed};

/// How an attempt ended, from the worker's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionOutcome {
    /// Acked `done`.
    Completed,
    /// Parked by a sleep or an event wait; not an attempt.
    Suspended,
    /// Failed with attempts left; back to `ready` after a backoff.
    Retried,
    /// Failed for good; dead-lettered.
    DeadLettered,
    /// Failed for good with `dead_letter = false`; row `failed`.
    Dropped,
    /// Cut by a drain; handed back uncounted.
    Interrupted,
    /// The claim was lost (cancelled, or re-delivered after a lapse); nothing settled.
    LeaseLost,
    /// No job of that name is registered in this worker; handed back uncounted for later.
    Deferred,
    /// Over a per-process limit or a fleet concurrency cap; handed back uncounted.
    Shed,
    /// `when_busy = fail` over a busy key: settled `failed` (outcome `refused`), uncounted.
    Refused,
}

/// What one attempt did.
#[derive(Debug, Clone)]
pub struct JobExecution {
    /// The job.
    pub job_id: JobId,
    /// The run.
    pub run_id: RunId,
    /// The job's name.
    pub name: String,
    /// The attempt's number.
    pub attempt: u32,
    /// How it ended.
    pub outcome: ExecutionOutcome,
    /// The error, summarised, when it failed.
    pub error: Option<String>,
    /// The error's code.
    pub code: Option<ErrorCode>,
    /// When the job is due again (a retry or a wake).
    pub resume_at: Option<Timestamp>,
    /// `true` when the `on_settled` hook failed all its tries (`X_JOB_ON_SETTLED_FAILED`).
    pub on_settled_failed: bool,
}

impl JobExecution {
    pub(crate) fn new(job: &ClaimedJob, outcome: ExecutionOutcome) -> Self {
        JobExecution {
            job_id: job.id,
            run_id: job.run_id,
            name: job.name.clone(),
            attempt: job.attempt,
            outcome,
            error: None,
            code: None,
            resume_at: None,
            on_settled_failed: false,
        }
    }
}

/// Why an attempt's cancellation fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopReason {
    Timeout,
    LeaseLost,
    SlotLost,
    Draining,
}

pub(crate) async fn execute(
    shared: &WorkerShared,
    job: ClaimedJob,
    slot: &SlotRelease<'_>,
) -> JobExecution {
    let Some(entry) = shared.registry.get(&job.name).copied() else {
        return defer_unknown(shared, job).await;
    };
    let store = shared.jobs.driver().lease_store();
    let held = match admit::admit(shared, &entry, &job).await {
        Admission::Admitted(held) => held,
        Admission::Shed(limit) => return shed(shared, job, limit).await,
        Admission::Refused(error) => return settle::refuse(shared, &entry, &job, error).await,
        Admission::Undecidable(error) => {
            return settle::settle(shared, &entry, &job, Verdict::Failed(error), slot).await
        }
    };
    let execution = run_admitted(shared, entry, &job, held.clone(), slot).await;
    admit::release(store, &held).await;
    shared.limiter.leave(&job);
    execution
}

/// Hands a claim back over a limit or a cap: uncounted, claimable again shortly.
async fn shed(shared: &WorkerShared, job: ClaimedJob, limit: &'static str) -> JobExecution {
    let now = shared.jobs.now();
    tracing::debug!(target: "jobs.worker.shed", job_id = %job.id, job = %job.name, limit, "over a limit; handed back uncounted");
    let until = admit::shed_until(now);
    let landed = shared
        .jobs
        .driver()
        .job_nack(&NackParams {
            job_id: job.id,
            by: job.by.clone(),
            target: NackTarget::Retry,
            run_at: until,
            counts_as_attempt: false,
            error: None,
            error_code: None,
            now,
        })
        .await;
    let mut execution = JobExecution::new(&job, ExecutionOutcome::Shed);
    if matches!(landed, Ok(true)) {
        execution.resume_at = Some(until);
    } else {
        execution.outcome = ExecutionOutcome::LeaseLost;
    }
    execution
}

async fn run_admitted(
    shared: &WorkerShared,
    entry: JobEntry,
    job: &ClaimedJob,
    held: Vec<HeldLease>,
    slot: &SlotRelease<'_>,
) -> JobExecution {
    let job = job.clone();
    let descriptor = *entry.descriptor();
    let cancel = CancellationToken::new();
    let stop: Arc<Mutex<Option<StopReason>>> = Arc::default();
    let seed = RunSeed {
        job_id: job.id,
        run_id: job.run_id,
        attempt: job.attempt,
        max_attempts: job.max_attempts,
        tenant: entry.run_tenant(&job.input, job.tenant_id.as_ref()),
        descriptor,
        driver: shared.jobs.driver().clone(),
        clock: shared.jobs.clock().clone(),
        fence: StepFence {
            job_id: job.id,
            by: job.by.clone(),
        },
        cancel: cancel.clone(),
        context: shared.context.clone(),
        observer: shared.observer.clone(),
    };
    let run = match Run::load(seed, job.has_steps).await {
        Ok(run) => run,
        Err(error) => {
            // The steps could not be read: an ordinary failed attempt, retried with backoff.
            let verdict = Verdict::Failed(error);
            return settle::settle(shared, &entry, &job, verdict, slot).await;
        }
    };

    let heartbeat = tokio::spawn(keep_claim(
        shared.jobs.clone(),
        job.clone(),
        held,
        shared.visibility_timeout,
        shared.heartbeat_interval,
        cancel.clone(),
        stop.clone(),
    ));
    let clock = shared.jobs.clock().clone();
    let timeout = async {
        match descriptor.timeout {
            Some(limit) => clock.sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    let set_stop = |reason: StopReason| {
        let mut stop = stop.lock().unwrap_or_else(|e| e.into_inner());
        stop.get_or_insert(reason);
    };
    let body = entry.execute(run.clone(), job.input.clone());
    let result = tokio::select! {
        result = body => Some(result),
        _ = timeout => {
            // The run's cancellation fires first, then the attempt fails.
            set_stop(StopReason::Timeout);
            cancel.cancel();
            None
        }
        _ = shared.drain.cancelled() => {
            set_stop(StopReason::Draining);
            cancel.cancel();
            None
        }
        _ = cancel.cancelled() => None,
    };
    heartbeat.abort();
    let stop_reason = *stop.lock().unwrap_or_else(|e| e.into_inner());

    if let Err(error) = run.flush_progress().await {
        tracing::warn!(
            target: "jobs.progress.unwritten",
            job_id = %job.id,
            code = error.code().map(|c| c.as_str()),
            "the last progress report was not written"
        );
    }
    let verdict = match (stop_reason, result) {
        (Some(StopReason::Draining), _) => Verdict::Interrupted,
        (Some(StopReason::LeaseLost), _) => Verdict::LeaseLost,
        (Some(StopReason::SlotLost), _) => Verdict::Failed(JobError::new(
            ErrorCode::JobSlotLost,
            format!(
                "job `{}` lost its fleet concurrency slot while running",
                descriptor.name
            ),
        )),
        (Some(StopReason::Timeout), _) => Verdict::Failed(JobError::new(
            ErrorCode::JobTimeout,
            format!(
                "job `{}` outran its timeout of {}",
                descriptor.name,
                humantime::format_duration(descriptor.timeout.unwrap_or_default())
            ),
        )),
        (None, _) if run.suspended_until().is_some() => {
            Verdict::Suspended(run.suspended_until().unwrap_or_else(|| clock.now()))
        }
        (None, Some(Ok(output))) => Verdict::Completed(output),
        (None, Some(Err(error))) => Verdict::Failed(error),
        (None, None) => Verdict::LeaseLost,
    };
    settle::settle(shared, &entry, &job, verdict, slot).await
}

/// Renews the claim, and the fleet slots it holds, every `interval`. A renewal answering
/// `false` (cancelled, re-claimed, slot taken), or a whole window with no renewal landing,
/// cancels the run.
async fn keep_claim(
    jobs: crate::client::Jobs,
    job: ClaimedJob,
    mut held: Vec<HeldLease>,
    window: Duration,
    interval: Duration,
    cancel: CancellationToken,
    stop: Arc<Mutex<Option<StopReason>>>,
) {
    let clock = jobs.clock().clone();
    let mut landed = clock.now();
    loop {
        clock.sleep(interval).await;
        let now = clock.now();
        let renewal = jobs
            .driver()
            .job_heartbeat(&HeartbeatParams {
                job_id: job.id,
                by: job.by.clone(),
                visibility_timeout: window,
                now,
            })
            .await;
        match renewal {
            Ok(true) => {
                landed = now;
                let store = jobs.driver().lease_store();
                match admit::renew(store, &mut held, window, now).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(target: "jobs.worker.slot-lost", job_id = %job.id, "a fleet concurrency slot is no longer held; stopping the run");
                        let mut stop = stop.lock().unwrap_or_else(|e| e.into_inner());
                        stop.get_or_insert(StopReason::SlotLost);
                        break;
                    }
                    Err(error) => tracing::warn!(
                        target: "jobs.heartbeat.failed",
                        job_id = %job.id,
                        code = error.code().map(|c| c.as_str()),
                        "a slot renewal failed; retrying within the window"
                    ),
                }
            }
            Ok(false) => {
                tracing::warn!(target: "jobs.lease.lost", job_id = %job.id, "the claim is no longer held; stopping the run");
                break;
            }
            Err(error) if clock.now() >= add(landed, window) => {
                tracing::error!(
                    target: "jobs.lease.lost",
                    job_id = %job.id,
                    code = error.code().map(|c| c.as_str()),
                    "no renewal landed for a whole visibility window; stopping the run"
                );
                break;
            }
            Err(error) => {
                tracing::warn!(
                    target: "jobs.heartbeat.failed",
                    job_id = %job.id,
                    code = error.code().map(|c| c.as_str()),
                    "a renewal failed; retrying within the window"
                );
            }
        }
    }
    {
        let mut stop = stop.lock().unwrap_or_else(|e| e.into_inner());
        stop.get_or_insert(StopReason::LeaseLost);
    }
    cancel.cancel();
}

/// A job this worker has no code for (removed, or only known to a newer deploy): hand it back
/// uncounted, visible again after one visibility timeout, so a worker that knows it can run it.
async fn defer_unknown(shared: &WorkerShared, job: ClaimedJob) -> JobExecution {
    let now = shared.jobs.now();
    tracing::warn!(
        target: "jobs.worker.job-unknown",
        job_id = %job.id,
        job = %job.name,
        "no job of this name is registered in this worker; handing it back"
    );
    let _ = shared
        .jobs
        .driver()
        .job_nack(&NackParams {
            job_id: job.id,
            by: job.by.clone(),
            target: NackTarget::Retry,
            run_at: add(now, shared.visibility_timeout),
            counts_as_attempt: false,
            error: Some(format!(
                "no job named `{}` is registered in worker {}",
                job.name, shared.id
            )),
            error_code: None,
            now,
        })
        .await;
    let mut execution = JobExecution::new(&job, ExecutionOutcome::Deferred);
    execution.resume_at = Some(add(now, shared.visibility_timeout));
    execution
}
