//! The bulk verbs: requeue, remove or promote up to [`MAX_BULK_ROWS`] rows of one state
//! (narrowed by queue, name or tenant), oldest first by `(created_at, id)`, each with its
//! history row (`bulk` detail). One script per queue moves that queue's share atomically
//! (`lua/introspect_bulk.lua`); over several queues a read-only first pass asks each queue for
//! its oldest movable rows, so the call moves the oldest over all of them, and `remaining` is
//! the sum of what each queue could still move.

use super::super::codec::micros;
use super::super::scripts;
use super::super::RedisDriver;
use crate::driver::introspect::*;
use crate::driver::Operation as Op;
use crate::error::JobError;

/// Runs bulk `verb` with `params`.
pub(super) async fn run(
    driver: &RedisDriver,
    verb: Bulk,
    params: &JobBulkParams,
) -> Result<BulkResult, JobError> {
    check_bulk_state(verb, params.state)?;
    let op = match verb {
        Bulk::Requeue => Op::IntrospectJobRequeueMany,
        Bulk::Remove => Op::IntrospectJobRemoveMany,
        Bulk::Promote => Op::IntrospectJobPromoteMany,
    };
    let queues = match &params.queue {
        Some(queue) => vec![queue.clone()],
        None => driver.queues(op).await?,
    };
    let budget = u64::from(MAX_BULK_ROWS);
    let mut result = BulkResult::default();
    // Each queue's quota of this call's rows.
    let quotas: Vec<u64> = if queues.len() <= 1 {
        vec![budget; queues.len()]
    } else {
        let plans = queues
            .iter()
            .map(|queue| script(driver, op, verb, "plan", queue, params, budget));
        let plans = futures::future::try_join_all(plans).await?;
        let mut oldest: Vec<(&str, usize)> = Vec::new();
        for (i, plan) in plans.iter().enumerate() {
            oldest.extend(plan.iter().skip(1).map(|member| (member.as_str(), i)));
        }
        oldest.sort_unstable();
        oldest.truncate(budget as usize);
        let mut quotas = vec![0u64; queues.len()];
        for (_, i) in oldest {
            quotas[i] += 1;
        }
        // A queue with no share this call still counts what it could move.
        for (plan, quota) in plans.iter().zip(&quotas) {
            if *quota == 0 {
                result.remaining += count(plan.first())?;
            }
        }
        quotas
    };
    let moves = queues
        .iter()
        .zip(&quotas)
        .filter(|(_, quota)| **quota > 0)
        .map(|(queue, quota)| script(driver, op, verb, "move", queue, params, *quota));
    for answer in futures::future::try_join_all(moves).await? {
        result.affected += count(answer.first())?;
        result.remaining += count(answer.get(1))?;
    }
    Ok(result)
}

/// One queue's script in `mode` (`plan` or `move`), with a quota of `quota` rows.
async fn script(
    driver: &RedisDriver,
    op: Op,
    verb: Bulk,
    mode: &str,
    queue: &str,
    params: &JobBulkParams,
    quota: u64,
) -> Result<Vec<String>, JobError> {
    let mut invocation = scripts::on_queue(&scripts::INTROSPECT_BULK, driver.keys(), queue);
    invocation
        .arg(match verb {
            Bulk::Requeue => "requeue",
            Bulk::Remove => "remove",
            Bulk::Promote => "promote",
        })
        .arg(mode)
        .arg(params.state.as_str())
        .arg(micros(params.now))
        .arg(params.actor.as_deref().unwrap_or(""))
        .arg(quota);
    if let Some(name) = &params.name {
        invocation.arg("name").arg(name);
    }
    if let Some(tenant) = &params.tenant_id {
        invocation.arg("tenant").arg(tenant);
    }
    driver.conn().script(op, &invocation).await
}

/// A count a script answered.
fn count(text: Option<&String>) -> Result<u64, JobError> {
    text.and_then(|t| t.parse().ok())
        .ok_or_else(super::super::enqueue::malformed)
}
