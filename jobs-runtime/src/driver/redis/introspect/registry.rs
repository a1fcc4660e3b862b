//! Queue pauses and the worker registry. A pause is the `PAUSE` hash in the queue's own slot,
//! which the claim script reads before it takes a row (`lua/introspect_pause.lua`); the paused
//! queues are read by walking the queue set. Workers live in the operator's slot
//! (`Keys::area("ops")`, `lua/introspect_workers.lua`): each row as JSON, and an expiry index
//! that every announcement sweeps.

use super::super::codec::{micros, time};
use super::super::scripts;
use super::super::RedisDriver;
use crate::driver::introspect::*;
use crate::driver::introspect::{
    QueuePauseParams, QueueResumeParams, WorkerForgetParams, WorkerListParams,
};
use crate::driver::Operation as Op;
use crate::error::JobError;

/// Pauses a queue; a second pause keeps the first pause's time and actor. The queue is filed
/// in the queue set first, so a pause of a queue never enqueued to is listed too.
pub(super) async fn pause(
    driver: &RedisDriver,
    params: &QueuePauseParams<'_>,
) -> Result<(), JobError> {
    const OP: Op = Op::IntrospectQueuePause;
    driver.file_queues(OP, [params.queue]).await?;
    let mut invocation = scripts::on_queue(&scripts::INTROSPECT_PAUSE, driver.keys(), params.queue);
    invocation
        .arg("pause")
        .arg(micros(params.now))
        .arg(params.actor.unwrap_or(""));
    driver.conn().script::<i64>(OP, &invocation).await?;
    Ok(())
}

/// Resumes a queue: whether it was paused.
pub(super) async fn resume(
    driver: &RedisDriver,
    params: &QueueResumeParams<'_>,
) -> Result<bool, JobError> {
    let mut invocation = scripts::on_queue(&scripts::INTROSPECT_PAUSE, driver.keys(), params.queue);
    invocation.arg("resume");
    let was: i64 = driver
        .conn()
        .script(Op::IntrospectQueueResume, &invocation)
        .await?;
    Ok(was > 0)
}

/// The paused queues, sorted by name (byte order).
pub(super) async fn paused(driver: &RedisDriver) -> Result<Vec<QueuePause>, JobError> {
    const OP: Op = Op::IntrospectQueuePaused;
    let queues = driver.queues(OP).await?;
    let reads = queues.iter().map(|queue| {
        let mut invocation = scripts::on_queue(&scripts::INTROSPECT_PAUSE, driver.keys(), queue);
        invocation.arg("read");
        async move { driver.conn().script::<Vec<String>>(OP, &invocation).await }
    });
    let answers = futures::future::try_join_all(reads).await?;
    let mut out = Vec::new();
    for (queue, answer) in queues.into_iter().zip(answers) {
        if let [at, actor] = &answer[..] {
            out.push(QueuePause {
                queue,
                paused_at: time(at)?,
                paused_by: (!actor.is_empty()).then(|| actor.clone()),
            });
        }
    }
    Ok(out)
}

/// Runs `verb` of the workers' script with `args`.
async fn workers<T: redis::FromRedisValue>(
    driver: &RedisDriver,
    op: Op,
    verb: &str,
    args: &[&str],
) -> Result<T, JobError> {
    let mut invocation = scripts::INTROSPECT_WORKERS.key(driver.keys().area("ops"));
    invocation.arg(verb);
    for arg in args {
        invocation.arg(*arg);
    }
    driver.conn().script(op, &invocation).await
}

/// Writes (or refreshes) a worker's row, sweeping the rows expired at its `now`.
pub(super) async fn announce(driver: &RedisDriver, a: &WorkerAnnounce) -> Result<(), JobError> {
    const OP: Op = Op::IntrospectWorkerAnnounce;
    let row = WorkerRow::announced(a);
    let json = serde_json::to_string(&row).map_err(|_| super::super::enqueue::malformed())?;
    let (now, expires) = (micros(a.now), micros(row.expires_at));
    workers::<i64>(driver, OP, "announce", &[&now, &a.id, &expires, &json]).await?;
    Ok(())
}

/// Deletes a worker's row.
pub(super) async fn forget(
    driver: &RedisDriver,
    params: &WorkerForgetParams<'_>,
) -> Result<(), JobError> {
    workers::<i64>(driver, Op::IntrospectWorkerForget, "forget", &[params.id]).await?;
    Ok(())
}

/// The workers whose row has not expired at `now`, sorted by id.
pub(super) async fn list(
    driver: &RedisDriver,
    params: &WorkerListParams,
) -> Result<Vec<WorkerRow>, JobError> {
    let now = micros(params.now);
    let rows: Vec<String> = workers(driver, Op::IntrospectWorkerList, "list", &[&now]).await?;
    let mut out = rows
        .iter()
        .map(|json| {
            serde_json::from_str::<WorkerRow>(json).map_err(|_| super::super::enqueue::malformed())
        })
        .collect::<Result<Vec<_>, _>>()?;
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}
