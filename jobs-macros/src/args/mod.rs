//! The arguments of each attribute as the user wrote them: darling structs, plain data.
//!
//! Nothing here decides what a value means. Every value is kept as the user's own expression
//! (`Raw`), so the typed parsers in `crate::value` can blame the exact tokens, and darling's
//! errors (unknown, duplicated or malformed arguments) are reworded into our voice by
//! [`shared::voice`].

pub mod backfill;
pub mod job;
mod shared;
pub mod task;

pub use shared::{list, recover_names};
