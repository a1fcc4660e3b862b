//! The counters: a settle adds to its job name's 1-minute bucket (a claim starts the attempt's
//! clock), the reads of buckets and totals, and the rollup into wider tiers.

use std::collections::BTreeMap;

use super::{Before, OperatorState};
use crate::clock::Timestamp;
use crate::driver::introspect::*;
use crate::driver::introspect::{CounterTotalsParams, CountersParams, CountersRollupParams};
use crate::driver::memory::MemoryDriver;
use crate::driver::records::*;
use crate::error::JobError;

impl OperatorState {
    /// Counts a change of `record` from `before`: a claim starts the attempt's clock; a settle
    /// adds to the 1-minute bucket of its job name.
    pub(in crate::driver::memory) fn observe(&mut self, before: Before, record: &JobRecord) {
        if record.claims != before.claims && record.state == JobState::Running {
            self.started.insert(record.id, record.updated_at);
            return;
        }
        let Some(outcome) =
            CounterOutcome::of(before.state, before.attempt, record.state, record.attempt)
        else {
            if record.state != JobState::Running {
                self.started.remove(&record.id);
            }
            return;
        };
        let now = record.updated_at;
        let started = self.started.remove(&record.id).unwrap_or(now);
        let elapsed = (now - started).num_milliseconds().max(0) as u64;
        let bucket = bucket_start(now, 60);
        if !self.counters.contains_key(record.name.as_str()) {
            self.counters.insert(record.name.clone(), BTreeMap::new());
        }
        let counts = self
            .counters
            .get_mut(record.name.as_str())
            .expect("filed just above")
            .entry((60, bucket))
            .or_insert_with(|| CounterBucket {
                bucket: Some(bucket),
                width_secs: 60,
                ..CounterBucket::default()
            });
        match outcome {
            CounterOutcome::Done => counts.done += if planted!(CounterMiscount) { 2 } else { 1 },
            CounterOutcome::Retried => counts.retried += 1,
            CounterOutcome::Failed => counts.failed += 1,
            CounterOutcome::Dead => counts.dead += 1,
        }
        counts.duration_ms += elapsed;
    }
}

/// One job name's buckets since a time, oldest first.
pub(super) fn counters(
    driver: &MemoryDriver,
    params: &CountersParams<'_>,
) -> Result<Vec<CounterBucket>, JobError> {
    let CountersParams { name, since } = *params;
    let state = driver.lock();
    let mut rows: Vec<CounterBucket> = state
        .operator
        .counters
        .get(name)
        .into_iter()
        .flatten()
        .filter(|((_, bucket), _)| *bucket >= since)
        .map(|(_, c)| c.clone())
        .collect();
    rows.sort_by_key(|c| (c.bucket, c.width_secs));
    Ok(rows)
}

/// Each job name's totals over the buckets since a time.
pub(super) fn totals(
    driver: &MemoryDriver,
    params: &CounterTotalsParams,
) -> Result<Vec<CounterTotals>, JobError> {
    let CounterTotalsParams { since } = *params;
    let state = driver.lock();
    let mut totals: BTreeMap<&str, CounterTotals> = BTreeMap::new();
    let buckets = state
        .operator
        .counters
        .iter()
        .flat_map(|(name, buckets)| buckets.iter().map(move |(key, c)| (name, key, c)));
    for (name, (_, bucket), c) in buckets {
        if *bucket < since {
            continue;
        }
        let t = totals
            .entry(name.as_str())
            .or_insert_with(|| CounterTotals {
                name: name.clone(),
                ..CounterTotals::default()
            });
        t.done += c.done;
        t.retried += c.retried;
        t.failed += c.failed;
        t.dead += c.dead;
        t.duration_ms += c.duration_ms;
    }
    Ok(totals.into_values().collect())
}

/// Folds the buckets that have aged out of their tier into the wider one.
pub(super) fn rollup(
    driver: &MemoryDriver,
    params: &CountersRollupParams,
) -> Result<u64, JobError> {
    let CountersRollupParams { now } = *params;
    let mut state = driver.lock();
    let counters = &mut state.operator.counters;
    let mut moved = 0u64;
    for buckets in counters.values_mut() {
        let moving: Vec<(u32, Timestamp)> = buckets
            .keys()
            .filter(|(width, bucket)| tier_width_at(*bucket, now) != Some(*width))
            .copied()
            .collect();
        moved += moving.len() as u64;
        for key in moving {
            let Some(c) = buckets.remove(&key) else {
                continue;
            };
            let Some(width) = tier_width_at(key.1, now) else {
                continue;
            };
            let bucket = bucket_start(key.1, width);
            let into = buckets
                .entry((width, bucket))
                .or_insert_with(|| CounterBucket {
                    bucket: Some(bucket),
                    width_secs: width,
                    ..CounterBucket::default()
                });
            into.done += c.done;
            into.retried += c.retried;
            into.failed += c.failed;
            into.dead += c.dead;
            into.duration_ms += c.duration_ms;
        }
    }
    Ok(moved)
}
