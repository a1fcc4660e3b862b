//! Upkeep of the store, apart from running jobs: retention deletes finished rows after their
//! windows (a worker's periodic pass), and the counter roll-up folds the operator counters
//! into their next tier (the leading scheduler's, once a minute).

mod retention;
mod rollup;

pub use retention::Retention;
pub(crate) use rollup::CounterRollup;
