//! The core port's reads: one job by id, each queue's counts, and each queue's next due time.

use super::codec::{fields, job, micros, time};
use super::scripts;
use super::RedisDriver;
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::driver::Operation as Op;
use crate::error::JobError;

pub(super) async fn get(driver: &RedisDriver, id: &JobId) -> Result<Option<JobRecord>, JobError> {
    let Some(queue) = driver.queue_of(Op::JobGet, id).await? else {
        return Ok(None);
    };
    let mut invocation = scripts::on_queue(&scripts::JOB, driver.keys(), &queue);
    invocation.arg("get").arg(id.to_string());
    let row: Vec<String> = driver.conn().script(Op::JobGet, &invocation).await?;
    if row.is_empty() {
        return Ok(None);
    }
    job(&fields(row)).map(Some)
}

pub(super) async fn queue_stats(
    driver: &RedisDriver,
    now: Timestamp,
) -> Result<Vec<QueueStats>, JobError> {
    let queues = driver.queues(Op::QueueStats).await?;
    let now_text = micros(now);
    let reads = queues.iter().map(|queue| {
        let mut invocation = scripts::on_queue(&scripts::STATS, driver.keys(), queue);
        invocation.arg(&now_text);
        async move {
            driver
                .conn()
                .script::<(u64, u64, u64, u64, u64, u64, u64, u64, String)>(
                    Op::QueueStats,
                    &invocation,
                )
                .await
        }
    });
    let answers = futures::future::try_join_all(reads).await?;
    let mut out = Vec::new();
    for (queue, (ready, delayed, running, suspended, done, failed, dead, cancelled, oldest)) in
        queues.into_iter().zip(answers)
    {
        let oldest_ready_ms = if oldest.is_empty() {
            None
        } else {
            Some((now - time(&oldest)?).num_milliseconds().max(0) as u64)
        };
        let stats = QueueStats {
            queue,
            ready,
            delayed,
            running,
            suspended,
            done,
            failed,
            dead,
            cancelled,
            oldest_ready_ms,
        };
        if stats
            != (QueueStats {
                queue: stats.queue.clone(),
                ..QueueStats::default()
            })
        {
            out.push(stats);
        }
    }
    Ok(out)
}

/// Each named queue's next due time: one script per queue (`lua/next_due.lua`, in the queue's
/// slot), the queues read at once.
pub(super) async fn next_due(
    driver: &RedisDriver,
    params: &NextDueParams,
) -> Result<Vec<QueueDue>, JobError> {
    let mut queues: Vec<&String> = Vec::with_capacity(params.queues.len());
    for queue in &params.queues {
        if !queues.contains(&queue) {
            queues.push(queue);
        }
    }
    let now_text = micros(params.now);
    let reads = queues.iter().map(|queue| {
        let mut invocation = scripts::on_queue(&scripts::NEXT_DUE, driver.keys(), queue);
        invocation.arg(&now_text);
        async move {
            driver
                .conn()
                .script::<String>(Op::QueueNextDue, &invocation)
                .await
        }
    });
    let answers = futures::future::try_join_all(reads).await?;
    let mut dues = Vec::new();
    for (queue, at) in queues.into_iter().zip(answers) {
        if !at.is_empty() {
            dues.push(QueueDue {
                queue: queue.clone(),
                at: time(&at)?,
            });
        }
    }
    Ok(dues)
}
