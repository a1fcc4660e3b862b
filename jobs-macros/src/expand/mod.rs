//! Code generation: the one pipeline every attribute goes through (`pipeline`), one file per
//! attribute for what is its own, the job descriptor they share (`descriptor`), and the
//! fallback used whenever a declaration has errors.

pub mod backfill;
pub mod consumer;
mod descriptor;
pub mod fallback;
pub mod job;
pub mod ledger;
pub mod partitions;
pub mod pipeline;
pub mod posting;
pub mod purge;
pub mod task;
pub mod webhook;
