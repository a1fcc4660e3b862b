//! Steps: a run's records in its queue's slot; the write fenced on the claim in the same
//! script. A `waiting` record first files the run with the events' slot (and learns whether
//! its event already came), so a publish between the run's look and its park still wakes it.

use super::codec::{micros, step, step_json};
use super::scripts;
use super::RedisDriver;
use crate::driver::records::*;
use crate::driver::{Operation as Op, StepPutParams};
use crate::error::JobError;

pub(super) async fn list(driver: &RedisDriver, run_id: RunId) -> Result<Vec<StepRecord>, JobError> {
    let Some(queue) = driver.queue_of(Op::StepList, &run_id).await? else {
        return Ok(Vec::new());
    };
    let mut invocation = scripts::on_queue(&scripts::JOB, driver.keys(), &queue);
    invocation.arg("steps").arg(run_id.to_string());
    let rows: Vec<String> = driver.conn().script(Op::StepList, &invocation).await?;
    let mut steps = rows
        .iter()
        .map(|r| step(r))
        .collect::<Result<Vec<_>, _>>()?;
    steps.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(steps)
}

pub(super) async fn put(
    driver: &RedisDriver,
    params: &StepPutParams<'_>,
) -> Result<bool, JobError> {
    let StepPutParams { record, fence } = *params;
    let json = step_json(record)?;
    driver.check_value("a step record", json.len())?;
    let Some(queue) = driver.queue_of(Op::StepPut, &fence.job_id).await? else {
        return Ok(false);
    };
    if let (StepStatus::Waiting, Some(wait)) = (record.status, &record.wait) {
        let came =
            super::events::file_waiter(driver, &queue, &fence.job_id, wait, record.updated_at)
                .await?;
        if came {
            // Marked as if the publish had woken it: its park resumes at once.
            let mut invocation = scripts::on_queue(&scripts::JOB, driver.keys(), &queue);
            invocation
                .arg("wake")
                .arg(fence.job_id.to_string())
                .arg(micros(record.updated_at))
                .arg(&wait.event)
                .arg(&wait.key);
            driver
                .conn()
                .script::<i64>(Op::StepPut, &invocation)
                .await?;
        }
    }
    let mut invocation = scripts::on_queue(&scripts::JOB, driver.keys(), &queue);
    invocation
        .arg("step_put")
        .arg(fence.job_id.to_string())
        .arg(&*fence.by.worker_id)
        .arg(fence.by.claim)
        .arg(record.run_id.to_string())
        .arg(&record.name)
        .arg(json);
    Ok(driver
        .conn()
        .script::<i64>(Op::StepPut, &invocation)
        .await?
        == 1)
}
