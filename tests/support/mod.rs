//! Harnesses shared by the integration tests that need more than the memory driver.
//! Include with `mod support;`.
//!
//! The process scenarios shared by the Postgres and SQLite tests (`chaos/`, `crash.rs`) declare
//! jobs, which would join every test binary's registry: the tests that run them include them
//! by path (`#[path = "support/chaos/mod.rs"] mod chaos;`) instead of through this module.

#![allow(dead_code)]

pub mod cli;
pub mod pg;
pub mod sqlite;
pub mod store;
pub mod wait;
