//! The invariants read at the end of a run, once faults are off and the fleet has healed.
//! The others are checked as events happen (`store.rs` for fences, completions, leases, cron
//! fires and tenants; `fleet.rs` for step bodies and reads), against the state the event met.

use std::collections::BTreeMap;

use jobs::clock::Timestamp;
use jobs::driver::introspect::CounterTotalsParams;
use jobs::driver::ledger_book::PostingLinesParams;
use jobs::driver::{JobDriver, JobGetParams, JobState};

use crate::history::Invariant;
use crate::world::World;

/// Whether a job in `state`, due at `run_at`, has finished or may legitimately still wait at
/// `now`.
fn settled(state: JobState, run_at: Timestamp, now: Timestamp) -> bool {
    matches!(
        state,
        JobState::Done | JobState::Failed | JobState::Dead | JobState::Cancelled
    ) || (matches!(
        state,
        JobState::Delayed | JobState::Suspended | JobState::Ready
    ) && run_at > now)
}

/// How many accepted jobs are not settled at `now` (the healing phase waits for none).
pub async fn unsettled(world: &World, now: Timestamp) -> usize {
    let ids: Vec<_> = world.history().accepted.keys().copied().collect();
    let mut open = 0;
    for id in ids {
        let row = world
            .store
            .job_get(&JobGetParams { id })
            .await
            .ok()
            .flatten();
        if !row.is_some_and(|r| settled(r.state, r.run_at, now)) {
            open += 1;
        }
    }
    open
}

/// The end-of-run checks: every accepted job settled; the counters agree with the rows; each
/// cron occurrence made one job.
pub async fn check_at_end(world: &World, now: Timestamp) {
    let accepted: Vec<_> = world.history().accepted.keys().copied().collect();
    for id in accepted {
        match world
            .store
            .job_get(&JobGetParams { id })
            .await
            .ok()
            .flatten()
        {
            None => world.history().violated(
                Invariant::AcceptedJobsFinish,
                format!("job {id} was acknowledged to its producer and is not in the store"),
            ),
            Some(row) if !settled(row.state, row.run_at, now) => world.history().violated(
                Invariant::AcceptedJobsFinish,
                format!(
                    "job {id} ({}) is {:?} due {} after the fleet healed",
                    row.name, row.state, row.run_at
                ),
            ),
            Some(_) => {}
        }
    }

    let rows = world.store.all_jobs();
    let mut done: BTreeMap<String, u64> = BTreeMap::new();
    let mut ticks: BTreeMap<String, u32> = BTreeMap::new();
    for row in &rows {
        if row.state == JobState::Done {
            *done.entry(row.name.clone()).or_default() += 1;
        }
        if row.name == "sim.tick" {
            let field = |name: &str| row.input.get(name).and_then(|v| v.as_str()).unwrap_or("");
            let occurrence = format!("task {} at {}", field("task"), field("at"));
            *ticks.entry(occurrence).or_default() += 1;
        }
    }
    for (at, count) in ticks {
        if count > 1 {
            world.history().violated(
                Invariant::CronFiresOnce,
                format!("the {at} occurrence made {count} jobs"),
            );
        }
    }
    let postings: Vec<_> = world.history().postings.iter().cloned().collect();
    let book = world
        .store
        .ledger_book()
        .expect("the memory driver keeps a book");
    for (ledger, tenant, key) in postings {
        let params = PostingLinesParams {
            ledger: ledger.clone(),
            tenant,
            key: key.clone(),
        };
        let lines = book.posting_lines(&params).await.unwrap_or_default();
        let mut sums: BTreeMap<&str, i64> = BTreeMap::new();
        for line in &lines {
            *sums.entry(line.currency.as_str()).or_default() += line.minor;
        }
        if lines.len() < 2 || sums.values().any(|sum| *sum != 0) {
            world.history().violated(
                Invariant::LedgerBalanced,
                format!(
                    "posting `{key}` of ledger `{ledger}` holds {} lines summing {sums:?}",
                    lines.len()
                ),
            );
        }
    }
    let introspect = world
        .store
        .introspect()
        .expect("the memory driver introspects");
    let since = now - chrono::Duration::days(1);
    let totals = introspect
        .counter_totals(&CounterTotalsParams { since })
        .await
        .unwrap_or_default();
    for total in totals {
        let rows_done = done.get(&total.name).copied().unwrap_or(0);
        if total.done != rows_done {
            world.history().violated(
                Invariant::CountersAgree,
                format!(
                    "the counters say {} runs of `{}` succeeded, the rows {rows_done}",
                    total.done, total.name
                ),
            );
        }
    }
}
