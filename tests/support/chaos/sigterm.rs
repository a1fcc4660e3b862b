//! SIGTERM under load: a worker process drains (stops claiming, lets running jobs finish
//! within its deadline, hands the rest back uncounted), and the next one finishes the rest on
//! their first counted attempt.

use std::io::BufRead;
use std::time::{Duration, Instant};

use jobs::prelude::*;

use super::fleet::Fleet;
use super::invariants::{self, unfinished};
use super::load::Ledger;
use super::{Drain, DrainWork};
use crate::support::store::Store;

pub async fn running_jobs_finish_and_the_rest_go_back_uncounted(store: &Store) {
    let started = Instant::now();
    let s = store.schema();
    super::audit::install(store).await;
    let jobs = store.jobs();
    // Six jobs finish well within the 3 s deadline, four outlast it.
    let (short, long) = (6u64, 4u64);
    let mut ids = Vec::new();
    for n in 0..short + long {
        let ms = if n < short { 200 } else { 6_000 };
        ids.push(
            DrainWork::enqueue(&jobs, Drain { n, ms })
                .await
                .expect("enqueue")
                .id,
        );
    }
    let mut fleet = Fleet::new(
        store,
        &[
            ("CONCURRENCY", "16"),
            ("SHUTDOWN_MS", "3000"),
            ("VISIBILITY_MS", "3000"),
        ],
    );
    let mut first = fleet.spawn();
    let bound = Instant::now() + Duration::from_secs(30);
    let starts = format!("select count(*) from {s}.side_effects where step = 'start'");
    while store.count(&starts).await < (short + long) as i64 {
        assert!(Instant::now() < bound, "every job started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let term = Instant::now();
    first.sigterm();
    let mut line = String::new();
    first.stdout.read_line(&mut line).expect("the drain notice");
    assert_eq!(line.trim(), "draining");
    // A job enqueued once the worker drains is not its own (a claim already in flight when the
    // SIGTERM landed may still take it: that is reported, not refused).
    let late = DrainWork::enqueue(&jobs, Drain { n: 100, ms: 10 })
        .await
        .expect("enqueue")
        .id;
    line.clear();
    first.stdout.read_line(&mut line).expect("the drain report");
    let status = first.child.wait().expect("the worker exits");
    let drained_in = term.elapsed();
    assert!(status.success(), "a drained worker exits 0: {status}");
    let late_taken = store
        .count(&format!(
            "select count(*) from {s}.claim_log where job_id = {} and app = '{}'",
            store.uuid_literal(late),
            first.app
        ))
        .await;
    assert_eq!(
        line.trim(),
        format!(
            "drained interrupted={long} completed={} lease_lost=0",
            short + late_taken as u64
        ),
        "the short jobs finished, the long ones were handed back"
    );
    assert!(
        drained_in < Duration::from_millis(3_000 + 2_500),
        "the drain kept to its deadline: {drained_in:?}"
    );
    let mut handed_back = 0;
    for (n, id) in ids.iter().enumerate() {
        let row = jobs.job(*id).await.expect("read").expect("exists");
        if (n as u64) < short {
            assert_eq!(row.state, JobState::Done, "short job {n}");
            assert_eq!(row.attempt, 1);
        } else {
            assert_eq!(row.state, JobState::Ready, "long job {n} handed back");
            assert_eq!(row.attempt, 0, "the interrupted attempt is not counted");
            assert_eq!(row.last_error_code.as_deref(), Some("X_DRAINING"));
            handed_back += 1;
        }
    }
    assert_eq!(
        store
            .count(&format!(
                "select count(*) from {s}.x_jobs where state = 'running'"
            ))
            .await,
        0,
        "nothing left running without an owner"
    );
    let ends_before = store
        .count(&format!(
            "select count(*) from {s}.side_effects where step = 'end'"
        ))
        .await;
    assert_eq!(ends_before, short as i64 + late_taken);

    // The next deploy finishes the handed-back jobs on their first counted attempt.
    let second = fleet.spawn();
    while unfinished(store).await > 0 {
        assert!(
            Instant::now() < bound,
            "the second worker finishes the rest"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    second.sigkill();
    for id in &ids[short as usize..] {
        let row = jobs.job(*id).await.expect("read").expect("exists");
        assert_eq!(row.state, JobState::Done);
        assert_eq!(row.attempt, 1, "attempt 1 survives the deploy");
    }
    let mut ledger = Ledger::default();
    for (n, id) in ids.iter().chain([&late]).enumerate() {
        ledger.ids.insert(*id, n as u64);
    }
    invariants::check(store, &ledger, "sigterm").await;
    println!(
        "sigterm: {short} finished within the deadline, {handed_back} handed back uncounted, \
         drained in {} ms (a job enqueued during the drain taken by it: {late_taken}); \
         {:.1} s in all",
        drained_in.as_millis(),
        started.elapsed().as_secs_f64()
    );
}
