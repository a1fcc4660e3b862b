//! Code generation: one file per attribute, plus the fallback used whenever a declaration has
//! errors.

pub mod fallback;
pub mod job;
pub mod task;
