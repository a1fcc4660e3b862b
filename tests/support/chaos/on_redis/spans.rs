//! Parents awaiting children under kills, on Redis: the scenario of `chaos/spans.rs` (each
//! `chaos_parent` a step, five `chaos_child` jobs invoked and awaited, a step recording what it
//! resumed with) on the test's own `redis-server`, while the test SIGKILLs and restarts worker
//! processes; then the Redis invariants (`invariants.rs`) and the same per-parent checks.

use std::time::{Duration, Instant};

use jobs::driver::JobId;
use jobs::prelude::*;

use super::invariants;
use super::store::RedisStore;
use crate::chaos::fleet::Worker;
use crate::chaos::load::{Ledger, Rng};
use crate::chaos::spans::{note_children, parents_resumed_with_every_result, KIDS};
use crate::chaos::{Chaos, ChaosParent};

/// One run: `parents` parents under kills, within `bound`.
pub async fn parents_resume_once_with_every_result(test: &str, parents: u64, bound: Duration) {
    let started = Instant::now();
    let store = RedisStore::start(test).await;
    store.install_audit().await;
    let jobs = store.jobs();
    let answers = jobs
        .enqueue_many::<ChaosParent, _>((0..parents).map(|n| Chaos { n }))
        .await
        .expect("enqueue the parents");
    let mut ledger = Ledger::default();
    for (n, answer) in (0..parents).zip(&answers) {
        ledger.note(n, answer);
    }
    let parent_ids: Vec<JobId> = answers.iter().map(|a| a.id).collect();
    let total = parents * (KIDS as u64 + 1);
    let mut rng = Rng::seeded();
    let mut fleet = store.fleet(&[
        ("VISIBILITY_MS", "1500"),
        ("CONCURRENCY", "8"),
        ("STEP_MS", "40"),
    ]);
    let mut workers: Vec<Worker> = (0..3).map(|_| fleet.spawn()).collect();
    let (mut kills, mut while_waiting) = (0u64, 0u64);
    let deadline = Instant::now() + bound;
    let mut last_kill = Instant::now();
    loop {
        let totals = store.totals().await.unwrap_or_default();
        if totals.all == total && totals.live == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the parents did not finish within {bound:?}: {totals:?}"
        );
        let left = totals.live + total.saturating_sub(totals.all);
        if (left * 10 >= total || while_waiting == 0)
            && last_kill.elapsed() >= Duration::from_millis(250)
        {
            last_kill = Instant::now();
            if waiting(&store, &parent_ids).await {
                while_waiting += 1;
            }
            let victim = rng.below(workers.len() as u64) as usize;
            workers.swap_remove(victim).sigkill();
            kills += 1;
            workers.push(fleet.spawn());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(workers);
    note_children(&jobs, &parent_ids, &mut ledger).await;
    let counts = invariants::check(&store, &ledger, "spans on redis").await;
    let s = store.schema();
    let p2_runs = parents_resumed_with_every_result(&jobs, &parent_ids, async |parent, saw| {
        let saw = saw.map_or(String::new(), |saw| format!(" and saw = '{saw}'"));
        store
            .count(&format!(
                "select count(*) from {s}.side_effects where step = 'p2' and job_id = '{parent}'{saw}"
            ))
            .await
    })
    .await;
    assert!(
        kills > 0 && while_waiting > 0,
        "kills landed while parents waited"
    );
    println!(
        "spans on redis: {parents} parents x {KIDS} children; {kills} SIGKILLs ({while_waiting} \
         while a parent waited); {} completed step re-runs; parents' last step ran {p2_runs} \
         times for {parents} parents; {:.1} s",
        counts.completed_step_reruns,
        started.elapsed().as_secs_f64()
    );
}

/// Whether some parent is parked on its children now.
async fn waiting(store: &RedisStore, parents: &[JobId]) -> bool {
    for parent in parents {
        if store
            .job(*parent)
            .await
            .is_some_and(|row| row.state == JobState::Suspended)
        {
            return true;
        }
    }
    false
}
