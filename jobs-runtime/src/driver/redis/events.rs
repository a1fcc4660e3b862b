//! Events: the bus in its own slot (`lua/events.lua`); a publish stores the event and takes the
//! runs filed as waiting on its name and key, then wakes each in its queue.

use std::sync::Arc;

use super::codec::micros;
use super::scripts;
use super::RedisDriver;
use crate::clock::{add, Timestamp};
use crate::driver::records::*;
use crate::driver::{EventFindParams, Operation as Op};
use crate::error::{ErrorCode, JobError};

pub(super) async fn publish(
    driver: &RedisDriver,
    event: &EventPublish,
) -> Result<EventId, JobError> {
    let json = serde_json::to_string(&JobEvent {
        id: event.id,
        name: event.name.clone(),
        key: event.key.clone(),
        payload: event.payload.clone(),
        published_at: event.now,
    })
    .map_err(|_| JobError::new(ErrorCode::Driver, "an event did not serialize"))?;
    driver.check_value("an event", json.len())?;
    let mut invocation = scripts::EVENTS.key(driver.keys().events());
    invocation
        .arg("publish")
        .arg(micros(event.now))
        .arg(micros(add(event.now, event.ttl)))
        .arg(&event.name)
        .arg(&event.key)
        .arg(json);
    let answer: Vec<String> = driver.conn().script(Op::EventPublish, &invocation).await?;
    for waiter in answer.iter().skip(1) {
        let Some((queue, id)) = waiter.split_once('\0') else {
            continue;
        };
        let mut wake = scripts::on_queue(&scripts::JOB, driver.keys(), queue);
        wake.arg("wake")
            .arg(id)
            .arg(micros(event.now))
            .arg(&event.name)
            .arg(&event.key);
        driver.conn().script::<i64>(Op::EventPublish, &wake).await?;
    }
    Ok(event.id)
}

/// Files a run as waiting on an event; answers whether a matching event came after its mark.
pub(super) async fn file_waiter(
    driver: &RedisDriver,
    queue: &Arc<str>,
    id: &JobId,
    wait: &WaitSpec,
    now: Timestamp,
) -> Result<bool, JobError> {
    let mut invocation = scripts::EVENTS.key(driver.keys().events());
    invocation
        .arg("wait")
        .arg(&wait.event)
        .arg(&wait.key)
        .arg(mark_of(&wait.since.mark))
        .arg(micros(now))
        .arg(format!("{queue}\0{id}"));
    Ok(driver
        .conn()
        .script::<i64>(Op::StepPut, &invocation)
        .await?
        == 1)
}

/// A mark this driver did not write matches every stored event.
fn mark_of(text: &str) -> i64 {
    text.parse().unwrap_or(0)
}

pub(super) async fn purge(
    driver: &RedisDriver,
    params: &EventPurgeParams,
) -> Result<u64, JobError> {
    let mut invocation = scripts::EVENTS.key(driver.keys().events());
    invocation
        .arg("purge")
        .arg(micros(params.now))
        .arg(params.limit);
    let gone: i64 = driver.conn().script(Op::EventPurge, &invocation).await?;
    Ok(gone.max(0) as u64)
}

pub(super) async fn mark(driver: &RedisDriver) -> Result<String, JobError> {
    let mut cmd = redis::cmd("GET");
    cmd.arg(format!("{}:seq", driver.keys().events()));
    let mark: Option<String> = driver.conn().query(Op::EventMark, &cmd).await?;
    Ok(mark.unwrap_or_else(|| "0".to_string()))
}

pub(super) async fn find(
    driver: &RedisDriver,
    params: &EventFindParams<'_>,
) -> Result<Option<JobEvent>, JobError> {
    let bus = format!(
        "{}:e:{}\0{}",
        driver.keys().events(),
        params.name,
        params.key
    );
    let now = params.now.timestamp_micros();
    let mut cmd = redis::cmd("ZRANGEBYSCORE");
    cmd.arg(bus)
        .arg(format!("({}", mark_of(&params.since.mark)))
        .arg("+inf");
    let members: Vec<String> = driver.conn().query(Op::EventFind, &cmd).await?;
    for member in members {
        let (expires, json) = member.split_at(17.min(member.len()));
        let unexpired = expires.parse::<i64>().is_ok_and(|at| at > now);
        if unexpired {
            let event: JobEvent = serde_json::from_str(json).map_err(|_| {
                JobError::new(
                    ErrorCode::Driver,
                    format!(
                        "redis {}: a stored event did not decode",
                        Op::DecodeEventRow
                    ),
                )
            })?;
            return Ok(Some(event));
        }
    }
    Ok(None)
}
