//! The engine on the memory driver, and the pure parts (parsers, the manifest, cron): enqueue,
//! the worker, retries, steps, events, concurrency caps, locks, backfills, ledgers, purges, the
//! scheduler, operator tenancy, and the fuzzed parsers and driver model. One binary; each module
//! is one former test file, and every job name it declares is unique in the binary (the worker
//! and the manifest read them all).

#[path = "../support/mod.rs"]
mod support;

mod backfill;
mod concurrency;
mod concurrency_refused;
mod consumer;
mod cron_grammar;
mod dependencies;
mod enqueue;
mod events;
mod export;
mod fuzz_driver_model;
mod fuzz_parsers;
mod invoke;
mod ledger;
mod lock;
mod manifest;
mod manifest_cli;
mod on_time;
mod on_time_start;
mod operator_tenancy;
mod outbox;
mod purge;
mod purge_declared;
mod rate;
mod retries;
mod scheduler;
mod scheduler_rollup;
mod steps;
mod worker;
