//! The rows and parameters that cross the [`JobDriver`](super::JobDriver) port, one module per
//! part of a job's life: enqueue, claim, settle, steps, events, and the job row and counts an
//! operator reads. Everything is re-exported here, so `crate::driver::X` names each record
//! wherever it lives.

mod claim;
mod dependency;
mod enqueue;
mod event;
mod group;
mod job;
mod settle;
mod stats;
mod step;

pub use claim::*;
pub use dependency::*;
pub use enqueue::*;
pub use event::*;
pub use group::*;
pub use job::*;
pub use settle::*;
pub use stats::*;
pub use step::*;

use uuid::Uuid;

/// A job's id: one row in the queue.
pub type JobId = Uuid;
/// A run's id: stable across a job's attempts and suspensions; steps are keyed by it.
pub type RunId = Uuid;
/// An event's id.
pub type EventId = Uuid;
