//! The verbs, one module per verb or per family of verbs. Each answers the text it prints (a
//! table, or JSON under `--json`) so that `cli/mod.rs` is only the dispatch.

pub(super) mod backfill;
pub(super) mod dashboard;
pub(super) mod errors;
pub(super) mod list;
pub(super) mod manifest;
pub(super) mod migrate;
pub(super) mod mutate;
pub(super) mod outbox;
pub(super) mod posting;
pub(super) mod show;
pub(super) mod stats;
pub(super) mod tasks;
pub(super) mod test;
pub(super) mod verify;
