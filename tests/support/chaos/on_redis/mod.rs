//! The chaos scenarios on Redis, run by `processes/chaos_redis.rs`. Redis has no tables and no
//! triggers, so what the SQL scenarios read from the queue's own database comes from elsewhere:
//! the jobs and their steps through the driver, the side effects and the claim and settle audit
//! from a Postgres schema of the test's own, which each worker process writes through its
//! auditing driver (`tests/bin/audit_driver.rs`). `store.rs` is the test's server, prefix and
//! side schema; `run.rs` the run and what it breaks (worker processes, the server, the
//! connections: `connections.rs`); `invariants.rs` what must hold after it; `foreign.rs` proves
//! the audit catches a write from a process that was not handed the claim; `spans.rs` runs
//! parents awaiting children under kills.

pub mod connections;
pub mod foreign;
pub mod invariants;
pub mod run;
pub mod spans;
pub mod store;
