//! Chaos on one SQLite file: several real worker processes (`tests/bin/chaos_worker.rs`) share
//! the file through SQLite's own locking while the test SIGKILLs and restarts them mid-step,
//! freezes them (SIGSTOP) until their claims lapse and are taken over, then lets them go on
//! with claims they no longer hold, and SIGTERMs them; then it checks what must hold whatever
//! broke (`support/chaos/invariants.rs`): nothing lost, no completed step run again, no row
//! taken twice, no settle from a worker that no longer holds the row, one live row per key.
//!
//! The scenarios are `support/chaos/`, shared with `chaos_postgres.rs`. The counts are printed
//! at the end (`cargo test --test processes chaos_sqlite -- --nocapture`).

use crate::support;

use crate::chaos;

use std::time::Duration;

use chaos::kills::{self, Break};
use support::store::Store;

/// Jobs in the main chaos run (`CHAOS_JOBS` overrides).
const CHAOS_JOBS: u64 = 2_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_kills_and_freezes_on_one_file_lose_nothing_and_rerun_no_completed_step() {
    let jobs = std::env::var("CHAOS_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CHAOS_JOBS);
    let store = Store::sqlite("chaos_kills").await;
    let run = kills::Run {
        jobs,
        workers: 4,
        bound: Duration::from_secs(150),
        breaks: Break::Freeze,
    };
    kills::run(&store, run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_worker_processes_on_one_file_never_take_one_row_twice() {
    let store = Store::sqlite("chaos_exclusive").await;
    chaos::exclusive::no_row_is_taken_twice(&store, 1_000, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_running_jobs_finish_and_hands_the_rest_back_uncounted() {
    let store = Store::sqlite("chaos_sigterm").await;
    chaos::sigterm::running_jobs_finish_and_the_rest_go_back_uncounted(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settle_audit_catches_a_settle_from_a_process_that_did_not_claim() {
    let store = Store::sqlite("chaos_audit").await;
    chaos::foreign::a_settle_from_a_process_that_did_not_claim_is_caught(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_thawed_after_losing_its_claims_writes_nothing_that_lands() {
    let store = Store::sqlite("chaos_frozen").await;
    chaos::frozen::a_thawed_worker_s_late_writes_land_nowhere(&store).await;
}

// ---------------------------------------------------------------------------------------------
// Parents awaiting children (`run.invoke_all`) under kills.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parents_awaiting_children_under_kills_resume_once_with_every_result() {
    let store = Store::sqlite("chaos_spans").await;
    chaos::spans::parents_resume_once_with_every_result(&store, 80, Duration::from_secs(120)).await;
}
