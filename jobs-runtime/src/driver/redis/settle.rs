//! The settling writes, each fenced on the claim inside its queue's script: ack (batched per
//! queue), nack, heartbeat, progress; and the cancel, with its history row in the same script.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::codec::{fields, job, micros};
use super::scripts;
use super::RedisDriver;
use crate::clock::add;
use crate::driver::records::*;
use crate::driver::{JobCancelParams, Operation as Op};
use crate::error::{ErrorCode, JobError};

pub(super) async fn ack_many(
    driver: &RedisDriver,
    params: &[AckParams],
) -> Result<Vec<bool>, JobError> {
    let op = if params.len() == 1 {
        Op::JobAck
    } else {
        Op::JobAckMany
    };
    let mut landed = vec![false; params.len()];
    let mut by_queue: BTreeMap<Arc<str>, Vec<usize>> = BTreeMap::new();
    for (i, p) in params.iter().enumerate() {
        // A job no queue holds was never claimed: the ack does not land.
        if let Some(queue) = driver.queue_of(op, &p.job_id).await? {
            by_queue.entry(queue).or_default().push(i);
        }
    }
    let now = params
        .iter()
        .map(|p| p.now)
        .max()
        .map(micros)
        .unwrap_or_default();
    let scripts = by_queue.iter().map(|(queue, members)| {
        let mut invocation = scripts::on_queue(&scripts::SETTLE, driver.keys(), queue);
        invocation.arg("ack").arg(&now);
        for &i in members {
            let p = &params[i];
            // The script reads '' as no result: no JSON text is empty.
            let result = p.result.as_ref().map(|r| r.to_string()).unwrap_or_default();
            invocation
                .arg(p.job_id.to_string())
                .arg(&*p.by.worker_id)
                .arg(p.by.claim)
                .arg(result);
        }
        async move { driver.conn().script::<Vec<i64>>(op, &invocation).await }
    });
    let answers = futures::future::try_join_all(scripts).await?;
    // 2: landed, and the job has dependents to judge.
    let mut judged = Vec::new();
    for ((queue, members), answer) in by_queue.iter().zip(answers) {
        for (&i, ok) in members.iter().zip(answer) {
            landed[i] = ok >= 1;
            if landed[i] {
                driver.forget(&params[i].job_id);
            }
            if ok == 2 && !judged.contains(queue) {
                judged.push(queue.clone());
            }
        }
    }
    if !judged.is_empty() {
        let now = params.iter().map(|p| p.now).max().unwrap_or_default();
        super::dependencies::release_after(driver, judged, now).await;
    }
    Ok(landed)
}

/// Runs one fenced verb of `settle.lua` on job `id`'s queue.
async fn fenced(
    driver: &RedisDriver,
    op: Op,
    verb: &str,
    id: &JobId,
    by: &ClaimIdentity,
    now: crate::clock::Timestamp,
    rest: &[String],
) -> Result<bool, JobError> {
    fenced_due(driver, op, verb, id, by, now, rest, None).await
}

/// [`fenced`], announcing `due` on the wake channel when the write lands (a nack's later run
/// time: `lua/settle.lua` publishes it in the same script).
#[allow(clippy::too_many_arguments)]
async fn fenced_due(
    driver: &RedisDriver,
    op: Op,
    verb: &str,
    id: &JobId,
    by: &ClaimIdentity,
    now: crate::clock::Timestamp,
    rest: &[String],
    due: Option<crate::clock::Timestamp>,
) -> Result<bool, JobError> {
    let Some(queue) = driver.queue_of(op, id).await? else {
        return Ok(false);
    };
    let mut invocation = scripts::on_queue(&scripts::SETTLE, driver.keys(), &queue);
    invocation
        .arg(verb)
        .arg(micros(now))
        .arg(id.to_string())
        .arg(&*by.worker_id)
        .arg(by.claim);
    for arg in rest {
        invocation.arg(arg);
    }
    if let Some(at) = due {
        let micros = at.timestamp_micros();
        invocation
            .arg(driver.keys().wake_channel())
            .arg(crate::driver::wake_payload::due(&queue, micros));
    }
    // 2: landed, and ended a job with dependents to judge.
    let answer = driver.conn().script::<i64>(op, &invocation).await?;
    if answer == 2 {
        super::dependencies::release_after(driver, vec![queue], now).await;
    }
    Ok(answer >= 1)
}

pub(super) async fn nack(driver: &RedisDriver, p: &NackParams) -> Result<bool, JobError> {
    let rest = [
        p.target.state().as_str().to_string(),
        micros(p.run_at),
        if p.counts_as_attempt { "1" } else { "0" }.to_string(),
        if p.error.is_some() { "1" } else { "0" }.to_string(),
        p.error.clone().unwrap_or_default(),
        p.error_code.clone().unwrap_or_default(),
    ];
    let later = matches!(p.target, NackTarget::Retry | NackTarget::Park) && p.run_at > p.now;
    let due = later.then_some(p.run_at);
    fenced_due(
        driver,
        Op::JobNack,
        "nack",
        &p.job_id,
        &p.by,
        p.now,
        &rest,
        due,
    )
    .await
}

pub(super) async fn heartbeat(driver: &RedisDriver, p: &HeartbeatParams) -> Result<bool, JobError> {
    let rest = [micros(add(p.now, p.visibility_timeout))];
    fenced(
        driver,
        Op::JobHeartbeat,
        "heartbeat",
        &p.job_id,
        &p.by,
        p.now,
        &rest,
    )
    .await
}

pub(super) async fn progress(driver: &RedisDriver, p: &ProgressParams) -> Result<bool, JobError> {
    let json = serde_json::to_string(&p.progress).unwrap_or_else(|_| "null".into());
    fenced(
        driver,
        Op::JobProgress,
        "progress",
        &p.job_id,
        &p.by,
        p.now,
        &[json],
    )
    .await
}

pub(super) async fn cancel(
    driver: &RedisDriver,
    params: &JobCancelParams,
) -> Result<JobRecord, JobError> {
    let Some(queue) = driver.queue_of(Op::JobCancel, &params.id).await? else {
        return Err(RedisDriver::unknown_job(
            ErrorCode::JobNotCancellable,
            &params.id,
        ));
    };
    let mut invocation = scripts::on_queue(&scripts::JOB, driver.keys(), &queue);
    invocation
        .arg("cancel")
        .arg(params.id.to_string())
        .arg(micros(params.now))
        .arg(params.actor.as_deref().unwrap_or(""))
        .arg(params.reason.as_deref().unwrap_or(""));
    let row = fields(driver.conn().script(Op::JobCancel, &invocation).await?);
    let cancelled = job(&row)?;
    // The jobs it invoked go with it, and theirs (`hc`: it has children).
    let queues = if row.contains_key("hc") {
        super::groups::cancel_children(driver, params, cancelled.id, queue).await?
    } else {
        vec![queue]
    };
    // Its dependents, if any, follow it, and the groups counting it count it (a cancel is
    // rare: no flag is read first).
    super::dependencies::release_after(driver, queues, params.now).await;
    Ok(cancelled)
}
