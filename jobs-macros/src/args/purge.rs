//! `#[purge(..)]` as written.

use super::common::ArgNames;
use darling::FromMeta;

use super::common::Common;
use crate::value::cron::CronValue;
use crate::value::duration::DurationValue;
use crate::value::text::{Text, TypeName};
use crate::value::tz::TzValue;
use crate::value::Arg;

/// The arguments of `#[purge(..)]`. Every one is optional here: which are required is decided
/// by `crate::check`.
#[derive(Debug, Default, FromMeta)]
pub struct PurgeArgs {
    /// `cron = "23 * * * *"`: when the purge task fires (default `DEFAULT_PURGE_CRON`).
    pub cron: Option<Arg<CronValue>>,
    /// `tz = "UTC"`: the schedule's zone (default UTC).
    pub tz: Option<Arg<TzValue>>,
    /// `task = "app.purge.hourly"`: the task's name (default `<name>.schedule`).
    pub task: Option<Arg<Text>>,
    /// `queue = "maintenance"`
    pub queue: Option<Arg<Text>>,
    /// `timeout = "10m"`: a pass's ceiling.
    pub timeout: Option<Arg<DurationValue>>,
    /// `handle = AppPurge`
    pub handle: Option<Arg<TypeName>>,
    /// `name`, `crate`.
    #[darling(flatten)]
    pub common: Common,
}

impl ArgNames for PurgeArgs {
    const NAMES: &'static [&'static str] = &[
        "cron", "tz", "task", "queue", "timeout", "name", "handle", "crate",
    ];
}

/// Why `#[purge]` refuses the argument `arg`, if it does.
pub fn purge_refused(arg: &str) -> Option<String> {
    let reason = match arg {
        "key" => {
            "a purge's idempotency key is fixed: one pass at a time, whoever fires it \
             (X_JOB_DECLARATION_INVALID)"
        }
        "tenant" => {
            "a purge belongs to no tenant: it deletes what has expired in the whole store \
             (X_JOB_DECLARATION_INVALID)"
        }
        "targets" => {
            "a purge's targets are values (pools, stores, windows) built per attempt by the fn \
             under `#[purge]`, not arguments (X_JOB_DECLARATION_INVALID)"
        }
        _ => return None,
    };
    Some(reason.to_owned())
}

/// Why `#[partitions]` refuses the argument `arg`, if it does.
pub fn partitions_refused(arg: &str) -> Option<String> {
    let reason = match arg {
        "key" => {
            "a partitions job's idempotency key is fixed: one run at a time, whoever fires it \
             (X_JOB_DECLARATION_INVALID)"
        }
        "tenant" => {
            "a partitions job belongs to no tenant: it keeps the tables' partitions for every \
             tenant's rows (X_JOB_DECLARATION_INVALID)"
        }
        "tables" | "ahead" | "retain" => {
            "a partitions job's tables are values built per run by the fn under \
             `#[partitions]` (`PartitionedTable::daily(\"events\").ahead(7).retain(90)`), not \
             arguments (X_JOB_DECLARATION_INVALID)"
        }
        _ => return None,
    };
    Some(reason.to_owned())
}
