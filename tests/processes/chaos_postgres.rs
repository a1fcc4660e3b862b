//! Chaos on Postgres: real worker processes (`tests/bin/chaos_worker.rs`) run thousands of
//! three-step jobs while the test SIGKILLs and restarts them, terminates their database
//! connections (`pg_terminate_backend`, found by `application_name`), restarts the server, and
//! SIGTERMs them; then it checks what must hold whatever broke (`support/chaos/invariants.rs`):
//! nothing lost, no completed step run again, no row taken twice, no settle from a worker that
//! no longer holds the row, one live row per idempotency key.
//!
//! The scenarios are `support/chaos/`, shared with `chaos_sqlite.rs`; the server restart is
//! Postgres' own. The counts are printed at the end
//! (`cargo test --test processes chaos_postgres -- --nocapture`).

use crate::support;

use crate::chaos;

use std::time::{Duration, Instant};

use chaos::fleet::{Fleet, Worker};
use chaos::kills::{self, Break};
use chaos::load::{enqueue_all, Ledger};
use support::pg;
use support::store::Store;

/// Jobs in the main chaos run (`CHAOS_JOBS` overrides).
const CHAOS_JOBS: u64 = 2_000;
/// Worker processes in the main chaos run.
const CHAOS_WORKERS: usize = 4;
/// The bound on the whole main chaos run, load and chaos included.
const CHAOS_BOUND: Duration = Duration::from_secs(150);

// ---------------------------------------------------------------------------------------------
// 1. Kills and cut connections under load.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_kills_and_cut_connections_lose_nothing_and_rerun_no_completed_step() {
    let jobs = std::env::var("CHAOS_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CHAOS_JOBS);
    let store = Store::postgres("chaos_kills").await;
    let run = kills::Run {
        jobs,
        workers: CHAOS_WORKERS,
        bound: CHAOS_BOUND,
        breaks: Break::CutConnections,
    };
    kills::run(&store, run).await;
}

// ---------------------------------------------------------------------------------------------
// 2. A server restart under load.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_under_load_loses_nothing() {
    let started = Instant::now();
    // A restart needs a server of the test's own: no private cluster is a failure that names
    // the fix, never a skip.
    let cluster = pg::private_cluster().unwrap_or_else(|why| panic!("{why}"));
    let url = cluster.url();
    let store = Store::postgres_on(&url, "chaos_restart").await;
    let s = store.schema();
    chaos::audit::install(&store).await;
    let jobs = store.jobs();
    let mut ledger = Ledger::default();
    let n = 600;
    enqueue_all(&jobs, &mut ledger, n).await;

    let mut fleet = Fleet::new(&store, &[("VISIBILITY_MS", "1500"), ("STEP_MS", "2")]);
    let workers: Vec<Worker> = (0..3).map(|_| fleet.spawn()).collect();
    let bound = Instant::now() + Duration::from_secs(90);
    // Restart once a third of the load is done, so the restart lands in the middle of it.
    let done = format!("select count(*) from {s}.x_jobs where state = 'done'");
    while store.count(&done).await * 3 < n as i64 {
        assert!(Instant::now() < bound, "the load did not get going");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let at_restart = chaos::invariants::unfinished(&store).await;
    let restart = Instant::now();
    cluster.stop().expect("stop the server");
    cluster.start().expect("start the server again");
    let outage = restart.elapsed();
    // The test's own pool reconnects as the workers' do.
    let left = format!(
        "select count(*) from {s}.x_jobs where state not in ('done', 'failed', 'dead', 'cancelled')"
    );
    while !matches!(store.try_count(&left).await, Ok(0)) {
        assert!(
            Instant::now() < bound,
            "the workers did not finish the load after the restart"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = restart.elapsed();
    drop(workers);
    let counts = chaos::invariants::check(&store, &ledger, "restart").await;
    assert_eq!(counts.done, n as i64);
    println!(
        "restart: {n} jobs, {at_restart} unfinished at the restart, server down and up in {} ms, \
         load finished {:.1} s after it; {:.1} s in all",
        outage.as_millis(),
        after.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------------
// 3. SIGTERM under load.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_running_jobs_finish_and_hands_the_rest_back_uncounted() {
    let store = Store::postgres("chaos_sigterm").await;
    chaos::sigterm::running_jobs_finish_and_the_rest_go_back_uncounted(&store).await;
}

// ---------------------------------------------------------------------------------------------
// The audit itself: a settle from a process other than the claim's holder is caught.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settle_audit_catches_a_settle_from_a_process_that_did_not_claim() {
    let store = Store::postgres("chaos_audit").await;
    chaos::foreign::a_settle_from_a_process_that_did_not_claim_is_caught(&store).await;
}

// ---------------------------------------------------------------------------------------------
// Several processes, nothing broken: no row is taken twice.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_worker_processes_never_take_one_row_twice() {
    let store = Store::postgres("chaos_exclusive").await;
    chaos::exclusive::no_row_is_taken_twice(&store, 1_000, 4).await;
}

// ---------------------------------------------------------------------------------------------
// A worker frozen past its leases, then thawed: its late writes land nowhere.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_thawed_after_losing_its_claims_writes_nothing_that_lands() {
    let store = Store::postgres("chaos_frozen").await;
    chaos::frozen::a_thawed_worker_s_late_writes_land_nowhere(&store).await;
}

// ---------------------------------------------------------------------------------------------
// Parents awaiting children (`run.invoke_all`) under kills.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parents_awaiting_children_under_kills_resume_once_with_every_result() {
    let store = Store::postgres("chaos_spans").await;
    chaos::spans::parents_resume_once_with_every_result(&store, 80, Duration::from_secs(120)).await;
}
