//! Chaos on Redis: real worker processes (`tests/bin/chaos_worker.rs`) run three-step jobs on a
//! `redis-server` of the test's own (AOF, `appendfsync always`) while the test breaks one thing
//! over and over: SIGKILLs worker processes mid-step and starts others (and freezes some until
//! their claims are taken over), SIGKILLs the server and restarts it, or cuts the workers'
//! connections with `CLIENT KILL`. Then every worker process
//! must still claim (it reconnected on its own), and what must hold whatever broke is checked
//! (`support/chaos/on_redis/invariants.rs`): nothing acknowledged is lost, no completed step
//! runs again, no claim ordinal is handed out twice, no write lands from a worker that no longer
//! holds the job.
//!
//! The scenarios are `support/chaos/on_redis/`; the side effects and the audit go to a Postgres
//! schema of the test's own. The counts are printed at the end
//! (`cargo test --test processes chaos_redis -- --nocapture`).

use crate::chaos;

use std::time::Duration;

use chaos::on_redis::run::{self, Break, Run};

/// Jobs in each run (`CHAOS_JOBS` overrides).
const CHAOS_JOBS: u64 = 2_000;

fn jobs() -> u64 {
    std::env::var("CHAOS_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CHAOS_JOBS)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_redis_worker_kills_mid_step_lose_nothing_and_rerun_no_completed_step() {
    let run = Run {
        jobs: jobs(),
        workers: 4,
        bound: Duration::from_secs(150),
        breaks: Break::Workers,
        cadence: Duration::from_millis(250),
        restarts: 0,
    };
    run::run("chaos_redis_kills", run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_redis_server_restarts_lose_nothing_acknowledged() {
    let run = Run {
        jobs: jobs(),
        workers: 3,
        bound: Duration::from_secs(150),
        breaks: Break::Server,
        cadence: Duration::ZERO,
        restarts: 2,
    };
    run::run("chaos_redis_restarts", run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_redis_client_kills_during_claims_and_acks_lose_nothing() {
    let run = Run {
        jobs: jobs(),
        workers: 3,
        bound: Duration::from_secs(150),
        breaks: Break::Connections,
        cadence: Duration::from_millis(150),
        restarts: 0,
    };
    run::run("chaos_redis_client_kills", run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_redis_the_audit_catches_a_write_from_a_process_that_did_not_claim() {
    chaos::on_redis::foreign::a_write_from_a_process_that_did_not_claim_is_caught().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_redis_parents_awaiting_children_under_kills_resume_once_with_every_result() {
    chaos::on_redis::spans::parents_resume_once_with_every_result(
        "chaos_redis_spans",
        60,
        Duration::from_secs(120),
    )
    .await;
}
