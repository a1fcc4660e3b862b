//! Stage 3, execute: load the run, keep the claim alive, race the body against its timeout,
//! the drain and the claim's loss, and come to a verdict. Nothing is written here but the
//! run's own progress: the settle stage writes the verdict.

use std::future::Future;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::admit::{Admitted, Declared};
use super::claim::Claimed;
use super::keeper;
use super::WorkerShared;
use crate::clock::Timestamp;
use crate::descriptor::JobDescriptor;
use crate::driver::lease::HeldLease;
use crate::driver::{ClaimedJob, GroupId, StepFence};
use crate::error::{ErrorCode, JobError};
use crate::limits::check_result;
use crate::registry::{ErasedBody, ErasedOutput, JobEntry};
use crate::run::claim_window::{ClaimWindow, StopReason};
use crate::run::{Run, RunSeed};

/// An admitted claim whose body ran (or could not start), with its verdict.
pub(crate) struct Executed {
    /// The claim and its slot.
    pub claimed: Claimed,
    /// The declared job. Its tenant is kept only when an `on_settled` hook will be told it.
    pub declared: Declared,
    /// What the attempt came to.
    pub verdict: Verdict,
    /// The fleet slots admission took, given back once the verdict is written.
    pub held: Vec<HeldLease>,
}

/// What the attempt came to, before anything is written.
pub(crate) enum Verdict {
    /// The body returned its output, with the result the job keeps (`None`: it keeps none).
    Completed(ErasedOutput, Option<serde_json::Value>),
    /// A sleep, an event wait or an invoke parks the run until then; an invoke names the
    /// group of children it awaits, whose wake is asked once the park is written.
    Suspended(Timestamp, Option<GroupId>),
    /// The body, its timeout, or the run's load failed.
    Failed(JobError),
    /// Cut by a drain.
    Interrupted,
    /// The claim was lost while it ran.
    LeaseLost,
}

/// Runs an admitted claim's body to a verdict.
///
/// The admission is taken apart before the future is made, so the future holds its parts once
/// (an async fn keeps its argument and the parts moved out of it side by side).
pub(crate) fn execute(
    shared: &Arc<WorkerShared>,
    admitted: Admitted,
) -> impl Future<Output = Executed> + Send + '_ {
    let Admitted {
        claimed,
        declared: Declared { entry, tenant },
        body,
        held,
        at,
    } = admitted;
    // After the body, only the `on_settled` hook reads the tenant: keep a copy for it alone.
    let hook_tenant = if entry.descriptor().on_settled {
        tenant.clone()
    } else {
        None
    };
    async move {
        let verdict = run_body(shared, &claimed.job, &entry, tenant, body, &held, at).await;
        Executed {
            claimed,
            declared: Declared {
                entry,
                tenant: hook_tenant,
            },
            verdict,
            held,
        }
    }
}

/// Loads the run, then races the body against its timeout, the drain and the claim's loss
/// while a heartbeat keeps the claim and its fleet slots alive.
async fn run_body(
    shared: &Arc<WorkerShared>,
    job: &ClaimedJob,
    entry: &JobEntry,
    tenant: Option<String>,
    body: Result<ErasedBody, JobError>,
    held: &[HeldLease],
    admitted_at: Timestamp,
) -> Verdict {
    let descriptor = *entry.descriptor();
    let cancel = CancellationToken::new();
    // The window runs from the claim's own stamp (its `visible_at` less the timeout), not from
    // the admission: a claim whose answer came back late (the process paused during the call,
    // a slow network) holds less than a full window, and counting from the admission let a
    // step start after another worker had taken the row (seen in the Redis chaos run: a reply
    // 3.3 s late on a 1.5 s lease).
    let claimed_at =
        job.visible_at - chrono::TimeDelta::from_std(shared.visibility_timeout).unwrap_or_default();
    // ..and it closes the clock skew allowance early: a worker whose clock runs ahead may take
    // the row that much before this one's clock says the claim lapsed.
    let window = ClaimWindow::new(admitted_at.min(claimed_at), shared.claim_window);
    let seed = RunSeed {
        job_id: job.id,
        run_id: job.run_id,
        attempt: job.attempt,
        max_attempts: job.max_attempts,
        tenant,
        descriptor,
        driver: shared.jobs.driver().clone(),
        clock: shared.jobs.clock().clone(),
        local_wake: shared.jobs.local_wake().clone(),
        fence: StepFence {
            job_id: job.id,
            by: job.by.clone(),
        },
        cancel: cancel.clone(),
        claim_window: window.clone(),
        context: shared.context.clone(),
        observer: shared.observer.clone(),
        environment: shared.environment.clone(),
    };
    // A run with no step records (every first attempt) skips the read; the read's future is
    // boxed, so an attempt's future does not carry it.
    let run = if job.has_steps {
        let load = Box::pin(Run::load(seed));
        match load.await {
            Ok(run) => run,
            // The steps could not be read: an ordinary failed attempt, retried with backoff.
            Err(error) => return Verdict::Failed(error),
        }
    } else {
        Run::fresh(seed)
    };

    // Renewed by the worker's keeper until this attempt's verdict is in.
    let kept = keeper::keep(
        shared,
        StepFence {
            job_id: job.id,
            by: job.by.clone(),
        },
        held.to_vec(),
        cancel.clone(),
        window.clone(),
    );
    let clock = shared.jobs.clock().clone();
    let timeout = async {
        match descriptor.timeout {
            Some(limit) => clock.sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    let body = async {
        match body {
            Ok(body) => body(run.clone()).await,
            // The payload no longer parses: the attempt fails as the body would.
            Err(error) => Err(error),
        }
    };
    let result = tokio::select! {
        biased;
        result = body => Some(result),
        _ = timeout => {
            // The run's cancellation fires first, then the attempt fails.
            window.stop(StopReason::Timeout);
            cancel.cancel();
            None
        }
        _ = shared.drain.cancelled() => {
            window.stop(StopReason::Draining);
            cancel.cancel();
            None
        }
        _ = cancel.cancelled() => None,
    };
    drop(kept);
    let stop_reason = window.stop_reason();

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
        (None, _) if run.suspended_until().is_some() => Verdict::Suspended(
            run.suspended_until().unwrap_or_else(|| clock.now()),
            run.awaiting(),
        ),
        (None, Some(Ok(output))) => match kept_result(&descriptor, &output) {
            Ok(result) => Verdict::Completed(output, result),
            // A result the job cannot keep fails the attempt, terminally (`jobs::limits`).
            Err(error) => Verdict::Failed(error),
        },
        (None, Some(Err(error))) => Verdict::Failed(error),
        (None, None) => Verdict::LeaseLost,
    };
    verdict
}

/// The result a job keeps (`keep_result`), serialised and checked as `jobs::limits` says;
/// `None` for a job that keeps none.
fn kept_result(
    descriptor: &JobDescriptor,
    output: &ErasedOutput,
) -> Result<Option<serde_json::Value>, JobError> {
    let Some(kept) = descriptor.result else {
        return Ok(None);
    };
    match kept.json_of(&**output) {
        Some(serialised) => check_result(descriptor.name, serialised).map(Some),
        // Only a hand-written `Job` can name one output type and return another.
        None => Err(JobError::new(
            ErrorCode::Invariant,
            format!(
                "job `{}` declares it keeps a result of type `{}`, and its body returned another type",
                descriptor.name, kept.output_type
            ),
        )
        .with_fix("declare the result with `KeptResult::of::<Output>()` of the job's own output type")),
    }
}
