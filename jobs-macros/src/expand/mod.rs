//! Code generation: one file per attribute, plus the fallback used whenever a declaration has
//! errors.

pub mod backfill;
mod factory;
pub mod fallback;
pub mod job;
pub mod ledger;
pub mod posting;
pub mod task;
