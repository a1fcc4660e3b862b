//! The claim: one script per demanded queue (each queue is one slot), run side by side; each
//! takes its queue's lapsed and due rows tenant by tenant in turn, fenced by the claim ordinal
//! it stamps on the row.

use std::sync::Arc;

use super::codec::{fields, job, micros};
use super::scripts;
use super::RedisDriver;
use crate::clock::add;
use crate::driver::records::*;
use crate::driver::Operation as Op;
use crate::error::{ErrorCode, JobError};

pub(super) async fn claim(
    driver: &RedisDriver,
    params: &ClaimParams,
) -> Result<ClaimResult, JobError> {
    if params.demand.is_empty() {
        return Err(JobError::new(
            ErrorCode::JobClaimQueuesEmpty,
            "a claim named no queue",
        ));
    }
    // Each demanded queue once, with its last limit.
    let demand: Vec<&QueueDemand> = params
        .demand
        .iter()
        .enumerate()
        .filter(|(i, d)| !params.demand[i + 1..].iter().any(|e| e.queue == d.queue))
        .map(|(_, d)| d)
        .collect();
    let now = micros(params.now);
    let visible_at = add(params.now, params.visibility_timeout);
    let vis = micros(visible_at);
    // A demand of no slot still runs the script: it buries lapsed final attempts (`jobs
    // drain`); a worker never sends one.
    let claims = demand.iter().map(|d| {
        let mut invocation = scripts::on_queue(&scripts::CLAIM, driver.keys(), &d.queue);
        invocation
            .arg(&now)
            .arg(d.limit)
            .arg(&*params.worker_id)
            .arg(&vis);
        for name in &params.drop_exhausted {
            invocation.arg(name);
        }
        async move {
            driver
                .conn()
                .script::<(Vec<Vec<String>>, Vec<Vec<String>>)>(Op::JobClaim, &invocation)
                .await
        }
    });
    let answers = futures::future::try_join_all(claims).await?;
    let mut result = ClaimResult::default();
    for (claimed, exhausted) in answers {
        for row in exhausted {
            result.exhausted.push(job(&fields(row))?);
        }
        for row in claimed {
            let f = fields(row);
            let has_steps = f.get("hs").is_some_and(|v| v == "1");
            let record = job(&f)?;
            let queue: Arc<str> = Arc::from(record.queue.as_str());
            driver.remember(record.id, &queue);
            driver.remember(record.run_id, &queue);
            result.jobs.push(ClaimedJob::from_claimed_row(
                record, has_steps, params, visible_at,
            ));
        }
    }
    Ok(result)
}
