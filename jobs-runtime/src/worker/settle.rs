//! Stage 4, settle: the one place an attempt's ending is written. It gives the slot back,
//! decides the one write (an ack, or a nack into the right state), writes it, tells
//! `on_settled` about an ending, and gives back what admission took. Settlement is not part of
//! the retry decision: the verdict is decided first, then written.

use std::future::Future;

use super::admit::{Refusal, Refused};
use super::claim::Claimed;
use super::execute::{Executed, Verdict};
use super::fleet_slots;
use super::hook::{self, HookEnding};
use super::limiter::shed_until;
use super::WorkerShared;
use crate::clock::{add, Timestamp};
use crate::descriptor::RetryPolicy;
use crate::driver::{AckParams, ClaimedJob, GroupId, GroupWakeParams, NackParams, NackTarget};
use crate::error::{ErrorClass, ErrorCode, JobError};
use crate::execution::{ExecutionOutcome, JobExecution};
use crate::registry::JobEntry;
use crate::retry::retry_delay;
use crate::settled::Outcome;

/// What the settle stage is handed: a claim admission turned away, or an attempt that ran.
pub(crate) enum Ending {
    /// Admission turned it away; its body never ran.
    Refused(Refused),
    /// It was admitted and its body ran to a verdict (or its run failed to load).
    Executed(Executed),
}

/// The one write an ending makes.
enum Write {
    /// `done`, through the batching completer.
    Ack(AckParams),
    /// Anywhere else.
    Nack(NackParams),
}

/// What settling an ending comes to, before anything is written.
struct Plan {
    write: Option<Write>,
    execution: JobExecution,
    hook: Option<HookEnding>,
    /// `false` for a deferral: the hand-back is best effort, the row's lease lapses anyway.
    must_land: bool,
    /// The group of children a parked invoke awaits: once the park is written, the store is
    /// asked to wake the run if the group finished meanwhile (`GroupWakeParams`).
    then_wake: Option<GroupId>,
}

/// Settles one claim: frees its slot, writes its ending, tells its hook, frees what admission
/// took.
///
/// The slot is freed and the write decided when the future is made (it is awaited at once): the
/// future holds only what the writes need, not the ending it was handed as well.
pub(crate) fn settle(
    shared: &WorkerShared,
    ending: Ending,
) -> impl Future<Output = JobExecution> + Send + '_ {
    let (claimed, declared, decided, held) = match ending {
        Ending::Refused(Refused { claimed, refusal }) => match refusal {
            Refusal::Unknown => (claimed, None, Decided::Unknown, None),
            Refusal::Shed(limit, until) => (claimed, None, Decided::Shed(limit, until), None),
            Refusal::Busy(declared, error) => {
                let decided = Decided::Unrun(Outcome::Refused, error);
                (claimed, Some(declared), decided, None)
            }
            Refusal::Expired(declared, error) => {
                let decided = Decided::Unrun(Outcome::Expired, error);
                (claimed, Some(declared), decided, None)
            }
            Refusal::Undecidable(declared, error) => {
                let decided = Decided::Verdict(Policy::of(&declared.entry), Verdict::Failed(error));
                (claimed, Some(declared), decided, None)
            }
        },
        Ending::Executed(Executed {
            claimed,
            declared,
            verdict,
            held,
        }) => {
            let decided = Decided::Verdict(Policy::of(&declared.entry), verdict);
            (claimed, Some(declared), decided, Some(held))
        }
    };
    let Claimed { job, slot } = claimed;
    // The body is over (or never ran): its slot takes the next job while this one settles, so
    // the next claim overlaps the settle's round trip (the completer batches acks).
    slot.release(shared, &job.queue);
    let now = shared.jobs.now();
    let mut plan = plan(shared, &job, decided, now);
    async move {
        if let Some(write) = plan.write.take() {
            let landed = match write {
                Write::Ack(params) => shared.completer.ack(shared.jobs.driver(), params).await,
                Write::Nack(params) => shared.jobs.driver().job_nack(&params).await,
            };
            if plan.must_land && !has_landed(&job, landed) {
                plan.execution.outcome = ExecutionOutcome::LeaseLost;
                plan.execution.resume_at = None;
                plan.hook = None;
            } else if let Some(group) = plan.then_wake {
                wake_parked(shared, job.id, group).await;
            }
        }
        if let (Some(ending), Some(declared)) = (plan.hook, declared) {
            // Only a job that declares `on_settled` has a hook to tell. Boxed: the telling's
            // future is most of a kilobyte, and every settle's future carried it.
            if declared.entry.descriptor().on_settled {
                let telling = Box::pin(hook::tell(&job, declared, ending));
                plan.execution.on_settled_failed = !telling.await;
            }
        }
        if let Some(held) = held {
            // What admission took, given back now the ending is written: the fleet slots
            // (boxed: only a capped job holds any, and every settle's future carried it),
            // then the per-process place.
            if !held.is_empty() {
                Box::pin(fleet_slots::release(shared, &held)).await;
            }
            shared.limiter.leave(&shared.limits, &job);
        }
        plan.execution
    }
}

/// Asks the store to wake a run parked on `group` if the group finished while the run was still
/// running. A failure is logged: the park's own run time (the invoke's poll) wakes it anyway.
async fn wake_parked(shared: &WorkerShared, job_id: crate::driver::JobId, group: GroupId) {
    let params = GroupWakeParams {
        group,
        now: shared.jobs.now(),
    };
    if let Err(error) = shared.jobs.driver().job_group_wake(&params).await {
        tracing::warn!(
            target: "jobs.invoke.wake-unasked",
            job_id = %job_id,
            code = error.code().map(|c| c.as_str()),
            "a parked invoke could not ask for its wake; it resumes at its next poll"
        );
    }
}

/// What a claim came to, from either stage.
enum Decided {
    /// An admitted attempt's verdict, or an admission that failed the attempt.
    Verdict(Policy, Verdict),
    Unknown,
    /// Over a limit, due again at the moment given or after the shed delay.
    Shed(&'static str, Option<Timestamp>),
    /// Settled `failed` without running (`when_busy = fail` over a busy key: `Refused`; past
    /// `expires_in`: `Expired`), uncounted.
    Unrun(Outcome, JobError),
}

/// What a failed attempt's settle reads of its job's declaration.
#[derive(Clone, Copy)]
struct Policy {
    retry: RetryPolicy,
    dead_letter: bool,
}

impl Policy {
    fn of(entry: &JobEntry) -> Self {
        let descriptor = entry.descriptor();
        Policy {
            retry: descriptor.retry,
            dead_letter: descriptor.dead_letter,
        }
    }
}

/// Decides the write, the report and the hook's ending. No I/O.
fn plan(shared: &WorkerShared, job: &ClaimedJob, decided: Decided, now: Timestamp) -> Plan {
    let execution = |outcome| JobExecution::new(job, outcome);
    let no_hook = |write, execution| Plan {
        write,
        execution,
        hook: None,
        must_land: true,
        then_wake: None,
    };
    match decided {
        Decided::Verdict(_, Verdict::LeaseLost) => {
            no_hook(None, execution(ExecutionOutcome::LeaseLost))
        }
        Decided::Verdict(_, Verdict::Completed(output, result)) => Plan {
            write: Some(Write::Ack(AckParams {
                job_id: job.id,
                by: job.by.clone(),
                result,
                now,
            })),
            execution: execution(ExecutionOutcome::Completed),
            hook: Some(HookEnding {
                outcome: Outcome::Completed,
                result: Some(output),
                error: None,
                code: None,
            }),
            must_land: true,
            then_wake: None,
        },
        Decided::Verdict(_, Verdict::Suspended(until, awaiting)) => {
            let mut report = execution(ExecutionOutcome::Suspended);
            report.resume_at = Some(until);
            let write = nack(job, now, NackTarget::Park, until, false, None);
            Plan {
                then_wake: awaiting,
                ..no_hook(Some(write), report)
            }
        }
        Decided::Verdict(_, Verdict::Interrupted) => {
            let drained = JobError::new(
                ErrorCode::Draining,
                "the worker shut down before the attempt finished",
            );
            let mut report = execution(ExecutionOutcome::Interrupted);
            report.code = Some(ErrorCode::Draining);
            report.resume_at = Some(now);
            let error = Some((drained.summary(), drained.code()));
            no_hook(
                Some(nack(job, now, NackTarget::Retry, now, false, error)),
                report,
            )
        }
        Decided::Verdict(policy, Verdict::Failed(error)) => failed(job, policy, error, now),
        Decided::Unknown => {
            // No code for it here (removed, or only known to a newer deploy): hand it back
            // uncounted, visible again after one visibility timeout, for a worker that knows it.
            tracing::warn!(
                target: "jobs.worker.job-unknown",
                job_id = %job.id,
                job = %job.name,
                "no job of this name is registered in this worker; handing it back"
            );
            let until = add(now, shared.visibility_timeout);
            let why = format!(
                "no job named `{}` is registered in worker {}",
                job.name, shared.id
            );
            let mut report = execution(ExecutionOutcome::Deferred);
            report.resume_at = Some(until);
            let write = nack(job, now, NackTarget::Retry, until, false, Some((why, None)));
            Plan {
                must_land: false,
                ..no_hook(Some(write), report)
            }
        }
        Decided::Shed(limit, until) => {
            tracing::debug!(target: "jobs.worker.shed", job_id = %job.id, job = %job.name, limit, "over a limit; handed back uncounted");
            let until = until.unwrap_or_else(|| shed_until(now));
            let mut report = execution(ExecutionOutcome::Shed);
            report.resume_at = Some(until);
            no_hook(
                Some(nack(job, now, NackTarget::Retry, until, false, None)),
                report,
            )
        }
        Decided::Unrun(outcome, error) => {
            // `when_busy = fail` over a busy key (`X_JOB_KEY_BUSY`) or past `expires_in`
            // (`X_JOB_EXPIRED`): the run settles `failed`, uncounted; its body never ran. Not a
            // dead letter; the hook hears `refused` or `expired`.
            let summary = error.summary();
            let reported = match outcome {
                Outcome::Expired => ExecutionOutcome::Expired,
                _ => ExecutionOutcome::Refused,
            };
            let mut report = execution(reported);
            report.code = error.code();
            report.error = Some(summary.clone());
            let write = nack(
                job,
                now,
                NackTarget::Fail,
                now,
                false,
                Some((summary.clone(), error.code())),
            );
            Plan {
                write: Some(write),
                execution: report,
                hook: Some(HookEnding {
                    outcome,
                    result: None,
                    error: Some(summary),
                    code: error.code(),
                }),
                must_land: true,
                then_wake: None,
            }
        }
    }
}

/// A failed attempt: retried after its backoff, or, terminal or out of attempts, failed for
/// good into the dead letters (or `failed` with `dead_letter = false`).
fn failed(job: &ClaimedJob, policy: Policy, error: JobError, now: Timestamp) -> Plan {
    let terminal = error.class() == ErrorClass::Terminal;
    let exhausted = job.attempt >= job.max_attempts;
    let mut report = JobExecution::new(job, ExecutionOutcome::Retried);
    report.code = error.code();
    if !(terminal || exhausted) {
        let delay = retry_delay(&policy.retry, job.attempt, error.class());
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
        let summary = error.summary();
        report.error = Some(summary.clone());
        report.resume_at = Some(run_at);
        let failure = Some((summary, error.code()));
        return Plan {
            write: Some(nack(job, now, NackTarget::Retry, run_at, true, failure)),
            execution: report,
            hook: None,
            must_land: true,
            then_wake: None,
        };
    }
    let (target, outcome, execution_outcome) = if policy.dead_letter {
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
    // Out of attempts on an error that would have been retried, the ending's code is
    // `X_JOB_MAX_ATTEMPTS` (the row's `last_error_code`, the report's and the hook's): the
    // last attempt's error, code and all, stays in the message. A terminal error keeps its own
    // code, since the attempts did not run out. Decided here, so every driver stores the same.
    let error = if terminal {
        error
    } else {
        JobError::new(
            ErrorCode::JobMaxAttempts,
            format!(
                "{} of {} attempts spent; the last failed: {}",
                job.attempt,
                job.max_attempts,
                error.summary()
            ),
        )
    };
    report.code = error.code();
    let stop = if terminal {
        "not retried: this code is classified terminal"
    } else {
        "not retried: attempts exhausted"
    };
    let summary = format!("{} — {stop}", error.summary());
    tracing::warn!(
        target: "jobs.attempt.failed",
        job_id = %job.id,
        job = %job.name,
        attempt = job.attempt,
        code = error.code().map(|c| c.as_str()),
        stop = if terminal { "terminal" } else { "attempts-exhausted" },
        "the job failed for good"
    );
    report.outcome = execution_outcome;
    report.error = Some(summary.clone());
    Plan {
        write: Some(nack(
            job,
            now,
            target,
            now,
            true,
            Some((summary.clone(), error.code())),
        )),
        execution: report,
        hook: Some(HookEnding {
            outcome,
            result: None,
            error: Some(summary),
            code: error.code(),
        }),
        must_land: true,
        then_wake: None,
    }
}

/// The one constructor of a nack: fenced on the claim, with the error's summary and code.
fn nack(
    job: &ClaimedJob,
    now: Timestamp,
    target: NackTarget,
    run_at: Timestamp,
    counts_as_attempt: bool,
    error: Option<(String, Option<ErrorCode>)>,
) -> Write {
    let (error, code) = error.map_or((None, None), |(summary, code)| (Some(summary), code));
    Write::Nack(NackParams {
        job_id: job.id,
        by: job.by.clone(),
        target,
        run_at,
        counts_as_attempt,
        error,
        error_code: code.map(|c| c.as_str().to_string()),
        now,
    })
}

/// Whether the write landed; a write that matched nothing, or failed, is logged: the row
/// stays running, its lease lapses and it is delivered again.
fn has_landed(job: &ClaimedJob, landed: Result<bool, JobError>) -> bool {
    match landed {
        Ok(true) => true,
        Ok(false) => {
            tracing::warn!(target: "jobs.settle.unowned", job_id = %job.id, "the settle matched nothing: the claim was lost");
            false
        }
        Err(error) => {
            tracing::error!(
                target: "jobs.settle.failed",
                job_id = %job.id,
                code = error.code().map(|c| c.as_str()),
                "the settle could not be written; the job will be delivered again"
            );
            false
        }
    }
}
