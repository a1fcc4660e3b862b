//! Real processes: the crash, chaos and scheduler-handover tests start the package's binaries
//! (`crash-worker`, `chaos-worker`, `scheduler-process`, `backfill-worker`, from `tests/bin/`)
//! and kill, freeze, cut or terminate them (and, on Redis, kill and restart the server and cut
//! connections with `CLIENT KILL`), or run them through a fault-injecting proxy on loopback
//! (`chaos_proxy.rs`, `support/fault_proxy.rs`); and the security checks. The scenarios shared
//! by the store modules declare jobs, so they are included here, once, and in no other binary.

#[path = "../support/mod.rs"]
mod support;

/// The chaos worker's auditing driver, here for the Redis audit's own check
/// (`support/chaos/on_redis/foreign.rs`).
#[path = "../bin/audit_driver.rs"]
#[allow(dead_code)]
mod audit_driver;
#[path = "../support/chaos/mod.rs"]
mod chaos;
#[path = "../support/crash.rs"]
mod crash;

mod chaos_bad_input;
mod chaos_postgres;
mod chaos_proxy;
mod chaos_redis;
mod chaos_restart_scheduler;
mod chaos_security;
mod chaos_sqlite;
mod crash_postgres;
mod crash_redis;
mod crash_sqlite;
mod outbox_relay_kill;
