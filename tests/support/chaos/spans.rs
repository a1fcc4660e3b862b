//! Parents awaiting children under kills: worker processes run `chaos_parent` jobs, each a
//! step, five `chaos_child` jobs invoked and awaited (two steps each), and a step recording what
//! it resumed with, while the test SIGKILLs and restarts workers, among them workers holding
//! parents that wait and children mid-step. Then, beside the shared invariants (nothing lost,
//! no completed step run again, no claim twice, no settle from a process that did not claim):
//! every parent resumed with every child's result, in order, each time its last step ran; each
//! parent has exactly its five children, each child names its parent and is done (nothing
//! orphaned, nothing enqueued twice by a replayed parent).

use std::time::{Duration, Instant};

use jobs::driver::JobId;
use jobs::prelude::*;

use super::fleet::{Fleet, Worker};
use super::invariants::{self, unfinished};
use super::load::{Ledger, Rng};
use super::{Chaos, ChaosParent};
use crate::support::store::Store;

/// Children each parent invokes (the worker's `KIDS`).
pub const KIDS: usize = 5;

/// One run: `parents` parents under kills, within `bound`.
pub async fn parents_resume_once_with_every_result(store: &Store, parents: u64, bound: Duration) {
    let started = Instant::now();
    super::audit::install(store).await;
    let jobs = store.jobs();
    let mut ledger = Ledger::default();
    let answers = jobs
        .enqueue_many::<ChaosParent, _>((0..parents).map(|n| Chaos { n }))
        .await
        .expect("enqueue the parents");
    for (n, answer) in (0..parents).zip(&answers) {
        ledger.note(n, answer);
    }
    let total = parents * (KIDS as u64 + 1);
    let mut rng = Rng::seeded();
    let mut fleet = Fleet::new(
        store,
        &[
            ("VISIBILITY_MS", "1500"),
            ("CONCURRENCY", "8"),
            ("STEP_MS", "40"),
        ],
    );
    let mut workers: Vec<Worker> = (0..3).map(|_| fleet.spawn()).collect();
    let s = store.schema();
    let waiting = format!(
        "select count(*) from {s}.x_jobs where name = 'chaos_parent' and state = 'suspended'"
    );
    let children_running =
        format!("select count(*) from {s}.x_jobs where name = 'chaos_child' and state = 'running'");
    let (mut kills, mut while_waiting, mut while_children_ran) = (0u64, 0u64, 0u64);
    let deadline = Instant::now() + bound;
    let mut last_kill = Instant::now();
    loop {
        let left = unfinished(store).await;
        let children = store
            .count(&format!(
                "select count(*) from {s}.x_jobs where name = 'chaos_child'"
            ))
            .await;
        if left == 0 && children as u64 == parents * KIDS as u64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the parents did not finish within {bound:?}: {left} jobs unfinished"
        );
        // Kill while a tenth of the work is left to do, or until one kill found a parent
        // waiting and one found a child running.
        let work_left = left as u64 + (parents * KIDS as u64).saturating_sub(children as u64);
        let seen_both = while_waiting > 0 && while_children_ran > 0;
        if (work_left * 10 >= total || !seen_both)
            && last_kill.elapsed() >= Duration::from_millis(250)
        {
            last_kill = Instant::now();
            if store.count(&waiting).await > 0 {
                while_waiting += 1;
            }
            if store.count(&children_running).await > 0 {
                while_children_ran += 1;
            }
            let victim = rng.below(workers.len() as u64) as usize;
            workers.swap_remove(victim).sigkill();
            kills += 1;
            workers.push(fleet.spawn());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(workers);
    let parent_ids: Vec<JobId> = answers.iter().map(|a| a.id).collect();
    note_children(&jobs, &parent_ids, &mut ledger).await;
    let counts = invariants::check(store, &ledger, "spans").await;
    assert_eq!(
        counts.dead + counts.other_final,
        0,
        "50 attempts outlast the kills"
    );
    assert_eq!(counts.done, total as i64, "every parent and child done");

    let p2_runs = parents_resumed_with_every_result(&jobs, &parent_ids, async |parent, saw| {
        let job = store.uuid_literal(parent);
        let saw = saw.map_or(String::new(), |saw| format!(" and saw = '{saw}'"));
        store
            .count(&format!(
                "select count(*) from {s}.side_effects where step = 'p2' and job_id = {job}{saw}"
            ))
            .await
    })
    .await;
    assert!(kills > 0, "the chaos killed something");
    assert!(
        while_waiting > 0 && while_children_ran > 0,
        "kills landed while parents waited ({while_waiting}) and children ran ({while_children_ran})"
    );
    println!(
        "spans: {parents} parents x {KIDS} children; {kills} SIGKILLs ({while_waiting} while a \
         parent waited, {while_children_ran} while a child ran); {} step executions, {} \
         interrupted step re-runs, {} completed step re-runs; parents' last step ran {p2_runs} \
         times for {parents} parents; {:.1} s",
        counts.step_executions,
        counts.interrupted_step_reruns,
        counts.completed_step_reruns,
        started.elapsed().as_secs_f64()
    );
}

/// Every parent has exactly its [`KIDS`] children, each done and naming it, and each execution of
/// its last step (`p2`) saw every child's result in order; answers how many times `p2` ran.
/// `p2_runs(parent, saw)` counts the parent's `p2` executions (those that saw `saw`, if given).
pub async fn parents_resumed_with_every_result(
    jobs: &Jobs,
    parents: &[JobId],
    p2_runs: impl AsyncFn(JobId, Option<&str>) -> i64,
) -> i64 {
    let mut runs = 0;
    for &parent in parents {
        let links = jobs.links(parent).await.expect("links");
        assert_eq!(
            links.children.len(),
            KIDS,
            "parent {parent}: exactly its children, none enqueued twice"
        );
        let mut results = Vec::new();
        for (child, state) in &links.children {
            assert_eq!(*state, Some(JobState::Done), "child {child} of {parent}");
            let child_links = jobs.links(*child).await.expect("links");
            assert_eq!(
                child_links.parent,
                Some(parent),
                "child {child} names its parent"
            );
            let row = jobs.job(*child).await.expect("read").expect("the child");
            let result = row.result.expect("a child keeps its result");
            results.push(result.as_str().expect("a token").to_string());
        }
        let expected = results.join(",");
        let ran = p2_runs(parent, None).await;
        let saw_all = p2_runs(parent, Some(&expected)).await;
        assert!(ran >= 1, "parent {parent} resumed");
        assert_eq!(
            saw_all, ran,
            "parent {parent} resumed with every child's result, in order, each time"
        );
        runs += ran;
    }
    runs
}

/// The children the parents enqueued, into the ledger (keyed after the parents' keys), so
/// "exactly the jobs enqueued" counts them.
pub async fn note_children(jobs: &Jobs, parents: &[JobId], ledger: &mut Ledger) {
    let first = parents.len() as u64;
    for (n, parent) in parents.iter().enumerate() {
        let links = jobs.links(*parent).await.expect("links");
        for (i, (child, _)) in links.children.iter().enumerate() {
            let key = first + n as u64 * KIDS as u64 + i as u64;
            ledger.ids.insert(*child, key);
        }
    }
}
