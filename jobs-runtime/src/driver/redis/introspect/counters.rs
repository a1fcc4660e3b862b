//! The per-name counters: `lib.lua`'s `observe` adds each settle to its job name's 1-minute
//! bucket in the queue's slot (`Q:c:<name>`, in the settle's own script); the reads sum each
//! queue's buckets here, and the rollup folds each queue's old buckets into the next tier
//! ([`COUNTER_TIERS`]) in one script per queue (`lua/introspect_counters.lua`).

use std::collections::BTreeMap;

use super::super::codec::micros;
use super::super::scripts;
use super::super::RedisDriver;
use crate::driver::introspect::*;
use crate::driver::introspect::{CounterTotalsParams, CountersParams, CountersRollupParams};
use crate::driver::Operation as Op;
use crate::error::JobError;

/// Runs `verb` of the counters script with `args` on every queue, answering each one's texts.
async fn on_every_queue(
    driver: &RedisDriver,
    op: Op,
    verb: &str,
    args: &[String],
) -> Result<Vec<Vec<String>>, JobError> {
    let queues = driver.queues(op).await?;
    let reads = queues.iter().map(|queue| {
        let mut invocation = scripts::on_queue(&scripts::INTROSPECT_COUNTERS, driver.keys(), queue);
        invocation.arg(verb);
        for arg in args {
            invocation.arg(arg);
        }
        async move { driver.conn().script::<Vec<String>>(op, &invocation).await }
    });
    futures::future::try_join_all(reads).await
}

fn number(text: &str) -> Result<u64, JobError> {
    text.parse().map_err(|_| super::super::enqueue::malformed())
}

/// The five counts `texts` holds, in the script's order: done, retried, failed, dead,
/// duration_ms.
fn counts(texts: &[String]) -> Result<[u64; 5], JobError> {
    let mut out = [0; 5];
    for (n, text) in out.iter_mut().zip(texts) {
        *n = number(text)?;
    }
    Ok(out)
}

/// One job name's buckets since a time, oldest first, summed over the queues.
pub(super) async fn buckets(
    driver: &RedisDriver,
    params: &CountersParams<'_>,
) -> Result<Vec<CounterBucket>, JobError> {
    let args = [params.name.to_string(), micros(params.since)];
    let answers = on_every_queue(driver, Op::IntrospectCounters, "buckets", &args).await?;
    let mut merged: BTreeMap<(i64, u32), CounterBucket> = BTreeMap::new();
    for texts in answers {
        for row in texts.chunks_exact(7) {
            let width: u32 = row[0]
                .parse()
                .map_err(|_| super::super::enqueue::malformed())?;
            let start: i64 = row[1]
                .parse()
                .map_err(|_| super::super::enqueue::malformed())?;
            let c = merged
                .entry((start, width))
                .or_insert_with(|| CounterBucket {
                    bucket: chrono::DateTime::from_timestamp(start, 0),
                    width_secs: width,
                    ..CounterBucket::default()
                });
            let [done, retried, failed, dead, ms] = counts(&row[2..])?;
            c.done += done;
            c.retried += retried;
            c.failed += failed;
            c.dead += dead;
            c.duration_ms += ms;
        }
    }
    Ok(merged.into_values().collect())
}

/// Every job name's counters since a time, summed over its buckets and the queues, by name.
pub(super) async fn totals(
    driver: &RedisDriver,
    params: &CounterTotalsParams,
) -> Result<Vec<CounterTotals>, JobError> {
    let args = [micros(params.since)];
    let answers = on_every_queue(driver, Op::IntrospectCounterTotals, "totals", &args).await?;
    let mut merged: BTreeMap<String, CounterTotals> = BTreeMap::new();
    for texts in answers {
        for row in texts.chunks_exact(6) {
            let t = merged
                .entry(row[0].clone())
                .or_insert_with(|| CounterTotals {
                    name: row[0].clone(),
                    ..CounterTotals::default()
                });
            let [done, retried, failed, dead, ms] = counts(&row[1..])?;
            t.done += done;
            t.retried += retried;
            t.failed += failed;
            t.dead += dead;
            t.duration_ms += ms;
        }
    }
    Ok(merged.into_values().collect())
}

/// Folds each queue's buckets past their tier into the next (drops those past the last);
/// answers how many buckets moved.
pub(super) async fn rollup(
    driver: &RedisDriver,
    params: &CountersRollupParams,
) -> Result<u64, JobError> {
    let mut args = vec![micros(params.now)];
    for tier in COUNTER_TIERS {
        args.push(tier.keep.as_micros().to_string());
        args.push(tier.bucket.as_secs().to_string());
    }
    let answers = on_every_queue(driver, Op::IntrospectCountersRollup, "rollup", &args).await?;
    let mut moved = 0;
    for texts in answers {
        moved += texts.first().map_or(Ok(0), |t| number(t))?;
    }
    Ok(moved)
}
