//! Helpers shared by the integration-test binaries, declared once in each binary's `main.rs`
//! (`#[path = "../support/mod.rs"] mod support;`) and reached as `crate::support`. Declares no
//! job: each binary registers only its own modules' jobs.
//!
//! The process scenarios shared by the Postgres and SQLite tests (`chaos/`, `crash.rs`) declare
//! jobs, which would join the registry of every binary that declares them: only
//! `processes/main.rs`, whose tests run them, includes them by path
//! (`#[path = "../support/chaos/mod.rs"] mod chaos;`), beside this module rather than in it.

#![allow(dead_code)]

pub mod apt;
pub mod cli;
pub mod fault_proxy;
pub mod hook_server;
pub mod nats;
pub mod outbox;
pub mod pg;
pub mod redis;
pub mod request;
pub mod sqlite;
pub mod store;
pub mod time;
pub mod wait;
