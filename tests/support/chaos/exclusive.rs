//! Several worker processes drain one queue with nothing breaking and leases far longer than
//! the run: then no row is ever taken twice. Every claim beyond a job's first follows a settle
//! that handed the job back (a retry), and no step runs twice but after such a retry.

use std::time::{Duration, Instant};

use super::fleet::{Fleet, Worker};
use super::invariants::{self, unfinished};
use super::load::{enqueue_all, Ledger};
use crate::support::store::Store;

pub async fn no_row_is_taken_twice(store: &Store, n: u64, workers: usize) {
    let started = Instant::now();
    let s = store.schema();
    super::audit::install(store).await;
    let jobs = store.jobs();
    let mut ledger = Ledger::default();
    enqueue_all(&jobs, &mut ledger, n).await;
    let mut fleet = Fleet::new(
        store,
        &[
            ("VISIBILITY_MS", "60000"),
            ("CONCURRENCY", "8"),
            ("STEP_MS", "0"),
        ],
    );
    let fleet: Vec<Worker> = (0..workers).map(|_| fleet.spawn()).collect();
    let bound = Instant::now() + Duration::from_secs(120);
    while unfinished(store).await > 0 {
        assert!(Instant::now() < bound, "the workers drain the queue");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(fleet);
    let c = invariants::check(store, &ledger, "exclusive").await;
    assert_eq!(c.done, n as i64, "every job done");
    assert_eq!(
        c.claims,
        c.jobs + c.retry_settles,
        "a claim beyond a job's first without a retry before it: a row taken twice"
    );
    assert!(
        c.interrupted_step_reruns <= c.retry_settles,
        "a step ran twice without a retry between"
    );
    let claimers = store
        .count(&format!("select count(distinct app) from {s}.claim_log"))
        .await;
    assert!(claimers > 1, "the processes shared the queue: {claimers}");
    println!(
        "exclusive: {n} jobs on {workers} processes ({claimers} claimed), {} claims, {} retries; \
         {:.1} s",
        c.claims,
        c.retry_settles,
        started.elapsed().as_secs_f64()
    );
}
