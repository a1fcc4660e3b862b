//! Harnesses shared by the integration tests that need more than the memory driver.
//! Include with `mod support;`.

#![allow(dead_code)]

pub mod cli;
pub mod pg;
pub mod sqlite;
