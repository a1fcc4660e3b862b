//! The chaos scenarios, on any SQL store (`support::store::Store`): real worker processes
//! (`tests/bin/chaos_worker.rs`) run three-step jobs while the test breaks them, then the
//! invariants (`invariants.rs`) are checked against the audit (`audit.rs`): kills and a second
//! breakage under load (`kills.rs`), a frozen then thawed worker (`frozen.rs`), a clean drain by
//! several processes (`exclusive.rs`), SIGTERM (`sigterm.rs`), the audit itself
//! (`foreign.rs`), parents awaiting children under kills (`spans.rs`). Run by `processes/chaos_postgres.rs` and
//! `processes/chaos_sqlite.rs`. The Redis scenarios, with their own audit and invariants over
//! the same workers, jobs and load (`fleet.rs`, `load.rs`), are `on_redis/`, run by
//! `processes/chaos_redis.rs`.
//!
//! Included by path in `processes/main.rs` only (it declares jobs):
//! `#[path = "../support/chaos/mod.rs"] mod chaos;`.

#![allow(dead_code)]

pub mod audit;
pub mod exclusive;
pub mod fleet;
pub mod foreign;
pub mod frozen;
pub mod invariants;
pub mod kills;
pub mod load;
pub mod on_redis;
pub mod sigterm;
pub mod spans;

use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Chaos {
    pub n: u64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Kid {
    pub n: u64,
    pub i: u64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Drain {
    pub n: u64,
    pub ms: u64,
}

/// The declarations the chaos worker runs; here only to enqueue them.
#[job(
    key = "chaos:{n}",
    tenant = none,
    retry(attempts = 50, backoff = fixed, delay = "100ms", jitter = none)
)]
pub async fn chaos_steps(_run: Run, _input: Chaos) -> Result<(), JobError> {
    unreachable!("the chaos worker process runs this job")
}

#[job(
    key = "drain:{n}",
    tenant = none,
    retry(attempts = 5, backoff = fixed, delay = "100ms", jitter = none)
)]
pub async fn drain_work(_run: Run, _input: Drain) -> Result<(), JobError> {
    unreachable!("the chaos worker process runs this job")
}

#[job(
    key = "chaos-child:{n}:{i}",
    tenant = none,
    keep_result,
    retry(attempts = 50, backoff = fixed, delay = "100ms", jitter = none)
)]
async fn chaos_child(_run: Run, _input: Kid) -> Result<String, JobError> {
    unreachable!("the chaos worker process runs this job")
}

#[job(
    key = "chaos-parent:{n}",
    tenant = none,
    retry(attempts = 50, backoff = fixed, delay = "100ms", jitter = none)
)]
async fn chaos_parent(_run: Run, _input: Chaos) -> Result<(), JobError> {
    unreachable!("the chaos worker process runs this job")
}
