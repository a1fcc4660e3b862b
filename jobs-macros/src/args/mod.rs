//! The arguments of each attribute as darling reads them into typed values.
//!
//! Every value is an [`Arg`](crate::value::Arg) of its type in `crate::value`, read by darling
//! through that type's [`Value`](crate::value::Value) parser. The arguments the attributes
//! share are one struct, flattened into each ([`common::Common`], [`common::Delivery`]).
//! darling's structural errors (an unknown, duplicated or malformed argument) gain the
//! declaration's code; an unknown argument lists the names the attribute takes
//! ([`common::ArgNames`]) with darling's near miss, a duplicated one says to keep one
//! ([`common::parse`]).

pub mod backfill;
pub mod common;
pub mod consumer;
pub mod job;
pub mod purge;
pub mod task;
pub mod webhook;

pub use common::recover_names;
