//! The enqueue: one script per queue that inserts the queue's jobs all or none under the
//! live-key rule, and on one server files their ids in the id index in the same script (on a
//! cluster the index lives in other slots and is written first, so any stored job is findable
//! by its id and run). A batch
//! over several queues is one script per queue; if a later queue's script refuses, the
//! earlier queues' new jobs are taken back, so the batch answers all or none to the caller
//! (a crash between two queues' scripts can leave the first queue's jobs: one queue is the
//! unit of atomicity on Redis).
//!
//! A job with a unique period stores its end (`uq`, its creation plus the period) and keeps its
//! entry in the queue's live-key hash when it finishes (`change` in `lua/lib.lua`); the enqueue
//! script answers such an entry while the period holds, and files the new job in its place once
//! it lapsed.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::codec::micros;
use super::scripts;
use super::RedisDriver;
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::driver::Operation as Op;
use crate::error::JobError;

pub(super) async fn enqueue(
    driver: &RedisDriver,
    requests: &[EnqueueRequest],
    now: Timestamp,
) -> Result<Vec<EnqueueResult>, JobError> {
    let op = if requests.len() == 1 {
        Op::JobEnqueue
    } else {
        Op::JobEnqueueMany
    };
    let mut by_queue: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, request) in requests.iter().enumerate() {
        by_queue.entry(request.queue.as_str()).or_default().push(i);
    }
    let inputs: Vec<String> = requests
        .iter()
        .map(|r| serde_json::to_string(&r.input).unwrap_or_else(|_| "null".into()))
        .collect();
    for (request, input) in requests.iter().zip(&inputs) {
        // The message is written only for a refusal.
        driver.check_value(
            format_args!("the input of job `{}`", request.name),
            input.len(),
        )?;
    }
    driver.file_queues(op, by_queue.keys().copied()).await?;
    // On one server the enqueue script files the ids itself (one round trip); a cluster keeps
    // the index in other slots, so it is written first, apart.
    let in_script = !driver.is_cluster();
    if !in_script {
        index_ids(driver, op, requests).await?;
    }
    let channel = driver.keys().wake_channel();
    let index_head = if in_script {
        driver.keys().id_index_head()
    } else {
        String::new()
    };
    let unique_until: Vec<String> = requests
        .iter()
        .map(|r| r.unique_until(now).map(micros).unwrap_or_default())
        .collect();
    let now = micros(now);
    let mut results: Vec<Option<EnqueueResult>> = vec![None; requests.len()];
    let mut inserted: Vec<(&str, JobId)> = Vec::new();
    for (queue, members) in &by_queue {
        let script = if members.len() == 1 {
            &scripts::ENQUEUE_ONE
        } else {
            &scripts::ENQUEUE
        };
        let mut invocation = scripts::on_queue(script, driver.keys(), queue);
        invocation
            .arg(&now)
            .arg(&channel)
            .arg(members.len())
            .arg(*queue)
            .arg(&index_head);
        for &i in members {
            let r = &requests[i];
            invocation.arg(r.id.to_string());
            if r.run_id == r.id {
                invocation.arg("");
            } else {
                invocation.arg(r.run_id.to_string());
            }
            invocation
                .arg(&r.name)
                .arg(&inputs[i])
                .arg(&r.idempotency_key)
                .arg(r.tenant_id.as_deref().unwrap_or(""))
                .arg(r.max_attempts)
                .arg(micros(r.run_at))
                .arg(r.traceparent.as_deref().unwrap_or(""))
                .arg(r.actor.as_deref().unwrap_or(""))
                .arg(match r.on_conflict {
                    ConflictPolicy::Dedupe => "d",
                    ConflictPolicy::Error => "e",
                    ConflictPolicy::Replace => "r",
                });
            if r.priority == DEFAULT_PRIORITY {
                invocation.arg("");
            } else {
                invocation.arg(r.priority);
            }
            invocation.arg(&unique_until[i]);
        }
        let answer: Vec<String> = match driver.conn().script(op, &invocation).await {
            Ok(answer) => answer,
            Err(error) => {
                take_back(driver, &inserted).await;
                return Err(error);
            }
        };
        let (head, rest) = answer.split_first().ok_or_else(malformed)?;
        // A conflict under the error policy comes back alone, with nothing written.
        if head == "conflict" {
            take_back(driver, &inserted).await;
            let [at, id, run] = <&[String; 3]>::try_from(rest).map_err(|_| malformed())?;
            let at: usize = at.parse().map_err(|_| malformed())?;
            let request = members
                .get(at.wrapping_sub(1))
                .map(|&i| &requests[i])
                .ok_or_else(malformed)?;
            let (id, run) = (parse_id(id)?, parse_id(run)?);
            return Err(EnqueueResult::held(request, id, run, false)
                .expect_err("the error policy refuses a held key"));
        }
        if head != "ok" || rest.len() % 4 != 0 {
            return Err(malformed());
        }
        // Every job the answer does not name was inserted.
        for chunk in rest.chunks_exact(4) {
            let at: usize = chunk[0].parse().map_err(|_| malformed())?;
            let &i = members.get(at.wrapping_sub(1)).ok_or_else(malformed)?;
            let (id, run) = (parse_id(&chunk[2])?, parse_id(&chunk[3])?);
            let request = &requests[i];
            results[i] = Some(if chunk[1] == "same" {
                EnqueueResult::held(request, id, run, true)?
            } else {
                EnqueueResult::held(request, id, run, false)?
            });
        }
        let queue_name: Arc<str> = Arc::from(*queue);
        for &i in members {
            if results[i].is_some() {
                continue;
            }
            let request = &requests[i];
            inserted.push((queue, request.id));
            driver.remember(request.id, &queue_name);
            driver.remember(request.run_id, &queue_name);
            results[i] = Some(EnqueueResult {
                id: request.id,
                run_id: request.run_id,
                deduped: false,
            });
        }
    }
    Ok(results
        .into_iter()
        .map(|r| r.expect("every request answered"))
        .collect())
}

/// Files each request's id and run id under its queue in the id index, one command per shard.
async fn index_ids(
    driver: &RedisDriver,
    op: Op,
    requests: &[EnqueueRequest],
) -> Result<(), JobError> {
    let mut by_shard: BTreeMap<String, redis::Cmd> = BTreeMap::new();
    for r in requests {
        // A run is its first job's unless one was named: only a run begun elsewhere is indexed.
        let ids = if r.run_id == r.id {
            vec![r.id]
        } else {
            vec![r.id, r.run_id]
        };
        for id in ids {
            by_shard
                .entry(driver.keys().id_index(&id))
                .or_insert_with_key(|shard| {
                    let mut cmd = redis::cmd("HSET");
                    cmd.arg(shard);
                    cmd
                })
                .arg(id.to_string())
                .arg(&r.queue);
        }
    }
    let writes = by_shard
        .values()
        .map(|cmd| driver.conn().query::<()>(op, cmd));
    futures::future::try_join_all(writes).await?;
    Ok(())
}

/// Deletes the jobs an unfinished batch inserted in earlier queues (best effort: the caller
/// is answered with the refusal either way).
pub(super) async fn take_back(driver: &RedisDriver, inserted: &[(&str, JobId)]) {
    for (queue, id) in inserted {
        let mut invocation = scripts::on_queue(&scripts::JOB, driver.keys(), queue);
        invocation.arg("take_back").arg(id.to_string());
        if let Err(error) = driver
            .conn()
            .script::<i64>(Op::JobEnqueueMany, &invocation)
            .await
        {
            tracing::warn!(code = ?error.code(), "an enqueue batch could not take back a job it inserted");
        }
        driver.forget(id);
    }
}

pub(super) fn parse_id(text: &str) -> Result<JobId, JobError> {
    uuid::Uuid::parse_str(text).map_err(|_| malformed())
}

pub(super) fn malformed() -> JobError {
    JobError::new(
        crate::error::ErrorCode::Driver,
        "redis: a script answered in a shape this driver did not write",
    )
}
