//! A worker frozen (SIGSTOP) in the middle of its jobs' first steps, past its leases, loses
//! every claim to another worker; thawed (SIGCONT) while the other still runs them, it goes
//! on where it stopped, and every write it then makes is fenced: no step output, heartbeat or
//! settle of it lands, and nothing is lost or run twice.

use std::io::BufRead;
use std::time::{Duration, Instant};

use super::fleet::{Fleet, Worker};
use super::invariants::{self, unfinished};
use super::load::{enqueue_all, Ledger};
use crate::support::store::Store;
use crate::support::wait;

/// Jobs, all running at once on the worker that is frozen.
const JOBS: u64 = 16;

pub async fn a_thawed_worker_s_late_writes_land_nowhere(store: &Store) {
    let started = Instant::now();
    let s = store.schema();
    super::audit::install(store).await;
    let jobs = store.jobs();
    let mut ledger = Ledger::default();
    enqueue_all(&jobs, &mut ledger, JOBS).await;
    // Each step works two seconds after its side effect: the freeze lands inside it.
    let mut fleet = Fleet::new(
        store,
        &[
            ("VISIBILITY_MS", "1500"),
            ("CONCURRENCY", "16"),
            ("STEP_MS", "2000"),
        ],
    );
    let mut frozen = fleet.spawn();
    let first_steps = format!(
        "select count(*) from {s}.side_effects where app = '{}' and step = 's1'",
        frozen.app
    );
    wait::until(
        Duration::from_secs(30),
        "the first worker to be in every job's first step",
        || async { store.count(&first_steps).await >= JOBS as i64 },
    )
    .await;
    freeze_outside_a_write(store, &frozen).await;
    let other = fleet.spawn();
    let taken = format!(
        "select count(*) from {s}.claim_log where app = '{}'",
        other.app
    );
    wait::until(
        Duration::from_secs(30),
        "the other worker to take over every job",
        || async { store.count(&taken).await >= JOBS as i64 },
    )
    .await;
    let thawed = Instant::now();
    frozen.signal("CONT");
    wait::until(Duration::from_secs(60), "every job to finish", || async {
        unfinished(store).await == 0
    })
    .await;
    // Its report: every run it held ended on a refused write, none completed.
    frozen.sigterm();
    let mut lines = String::new();
    for _ in 0..2 {
        frozen
            .stdout
            .read_line(&mut lines)
            .expect("the drain report");
    }
    assert_eq!(
        lines,
        format!("draining\ndrained interrupted=0 completed=0 lease_lost={JOBS}\n"),
        "the thawed worker lost every claim and completed nothing"
    );
    let settled_by_frozen = store
        .count(&format!(
            "select count(*) from {s}.settle_log where settler_app = '{}'",
            frozen.app
        ))
        .await;
    assert_eq!(settled_by_frozen, 0, "the thawed worker settled nothing");
    drop((frozen, other));
    let c = invariants::check(store, &ledger, "frozen").await;
    assert_eq!(c.done, JOBS as i64, "every job done");
    println!(
        "frozen: {JOBS} jobs taken over from a frozen worker, thawed {:.1} s before the last \
         finished; {:.1} s in all",
        thawed.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

/// SIGSTOPs `worker` at a moment it holds no write lock: a process frozen inside a SQLite
/// write transaction would stop every other writer of the file until it is thawed.
async fn freeze_outside_a_write(store: &Store, worker: &Worker) {
    for _ in 0..100 {
        worker.signal("STOP");
        if !store.write_locked().await {
            return;
        }
        worker.signal("CONT");
    }
    panic!(
        "{} held the write lock at every one of 100 freezes",
        worker.app
    );
}
