//! The verbs on one job: remove, requeue (from a step too) and promote. Each is one script in
//! the job's queue (`lua/introspect_verbs.lua`) that checks the row, changes it and appends its
//! history row together; a refusal writes nothing and is worded here by the port's shared
//! rules, from the row the script saw.
//!
//! A removed job keeps its id in the id index, so its history (kept until the purge takes it)
//! is still found by its id.

use super::super::scripts;
use super::super::RedisDriver;
use super::record;
use crate::clock::Timestamp;
use crate::driver::introspect::*;
use crate::driver::introspect::{JobPromoteParams, JobRemoveParams};
use crate::driver::records::*;
use crate::driver::Operation as Op;
use crate::error::JobError;

/// What a verb's script answered.
enum Answer {
    Done(JobRecord),
    Missing,
    /// The row's state forbids the act.
    Refused(JobRecord),
    /// The run has no such step.
    NoStep,
    /// A live job (this id) holds the row's key.
    Held(JobId, JobRecord),
}

impl Answer {
    fn read(mut flat: Vec<String>) -> Result<Answer, JobError> {
        if flat.is_empty() {
            return Err(super::super::enqueue::malformed());
        }
        let status = flat.remove(0);
        Ok(match status.as_str() {
            "ok" => Answer::Done(record(flat)?),
            "missing" => Answer::Missing,
            "refused" => Answer::Refused(record(flat)?),
            "no_step" => Answer::NoStep,
            "held" if !flat.is_empty() => {
                let holder = super::super::enqueue::parse_id(&flat.remove(0))?;
                Answer::Held(holder, record(flat)?)
            }
            _ => return Err(super::super::enqueue::malformed()),
        })
    }

    /// The row, or the port's refusal for `verb` on job `id`.
    fn row(self, verb: Bulk, id: JobId, step: Option<&str>) -> Result<JobRecord, JobError> {
        match self {
            Answer::Done(row) => Ok(row),
            Answer::Missing => Err(not_found(id)),
            Answer::Refused(row) => Err(refusal(verb, Some(&row), id)),
            Answer::NoStep => Err(unknown_step(id, step.unwrap_or_default())),
            Answer::Held(holder, row) => Err(duplicate(&row, Some(holder))),
        }
    }
}

/// Runs `verb` of `introspect_verbs.lua` on job `id` in its queue (`Missing` when no queue
/// holds it).
async fn run(
    driver: &RedisDriver,
    op: Op,
    verb: &str,
    id: JobId,
    now: Timestamp,
    actor: Option<&str>,
    rest: &[&str],
) -> Result<Answer, JobError> {
    let Some(queue) = driver.queue_of(op, &id).await? else {
        return Ok(Answer::Missing);
    };
    let mut invocation = scripts::on_queue(&scripts::INTROSPECT_VERBS, driver.keys(), &queue);
    invocation
        .arg(verb)
        .arg(id.to_string())
        .arg(super::super::codec::micros(now))
        .arg(actor.unwrap_or(""));
    for arg in rest {
        invocation.arg(*arg);
    }
    Answer::read(driver.conn().script(op, &invocation).await?)
}

/// Deletes a job that is not running, with its run's steps; answers the row as it was.
pub(super) async fn remove(
    driver: &RedisDriver,
    params: &JobRemoveParams,
) -> Result<JobRecord, JobError> {
    let actor = params.actor.as_deref();
    run(
        driver,
        Op::IntrospectJobRemove,
        "remove",
        params.id,
        params.now,
        actor,
        &[],
    )
    .await?
    .row(Bulk::Remove, params.id, None)
}

/// Puts one finished job back in its queue, due now, optionally forgetting its steps from one
/// on.
pub(super) async fn requeue(
    driver: &RedisDriver,
    params: &JobRequeueParams,
) -> Result<JobRecord, JobError> {
    let step = params.from_step.as_deref();
    let rest = match step {
        Some(step) => ["1", step],
        None => ["0", ""],
    };
    let actor = params.actor.as_deref();
    run(
        driver,
        Op::IntrospectJobRequeue,
        "requeue",
        params.id,
        params.now,
        actor,
        &rest,
    )
    .await?
    .row(Bulk::Requeue, params.id, step)
}

/// Makes a job that waits for its run time due now.
pub(super) async fn promote(
    driver: &RedisDriver,
    params: &JobPromoteParams,
) -> Result<JobRecord, JobError> {
    let actor = params.actor.as_deref();
    run(
        driver,
        Op::IntrospectJobPromote,
        "promote",
        params.id,
        params.now,
        actor,
        &[],
    )
    .await?
    .row(Bulk::Promote, params.id, None)
}
