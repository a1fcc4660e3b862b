//! `#[consumer(..)]` as written.

use darling::FromMeta;

use super::common::{ArgNames, Common};
use crate::value::count::Count;
use crate::value::cron::CronValue;
use crate::value::duration::DurationValue;
use crate::value::text::{FnPath, Text, TypeName};
use crate::value::tz::TzValue;
use crate::value::Arg;

/// The arguments of `#[consumer(..)]`. Every one is optional here: which are required is
/// decided by `crate::check`.
#[derive(Debug, Default, FromMeta)]
pub struct ConsumerArgs {
    /// `source = path::to::keyset_fn`
    pub source: Option<Arg<FnPath>>,
    /// `batch = 100`: rows per page.
    pub batch: Option<Arg<Count>>,
    /// `lap = 100`: pages per lap.
    pub lap: Option<Arg<Count>>,
    /// `poll = "5s"`: how long after a caught-up lap the next starts.
    pub poll: Option<Arg<DurationValue>>,
    /// `cron = "* * * * *"`: when the supervisor fires.
    pub cron: Option<Arg<CronValue>>,
    /// `tz = "UTC"`: the supervisor's zone.
    pub tz: Option<Arg<TzValue>>,
    /// `queue = "consumers"`
    pub queue: Option<Arg<Text>>,
    /// `timeout = "1h"`: an attempt's ceiling.
    pub timeout: Option<Arg<DurationValue>>,
    /// `handle = OrdersFeed`
    pub handle: Option<Arg<TypeName>>,
    /// `name` (required: the job's name and key, the ledger's `consumer:<name>`), `crate`.
    #[darling(flatten)]
    pub common: Common,
}

impl ArgNames for ConsumerArgs {
    const NAMES: &'static [&'static str] = &[
        "name", "source", "batch", "lap", "poll", "cron", "tz", "queue", "timeout", "handle",
        "crate",
    ];
}

/// Why `#[consumer]` refuses the argument `arg`, if it does.
pub fn consumer_refused(arg: &str) -> Option<String> {
    let reason = match arg {
        "key" => {
            "a consumer's idempotency key is `<name>:<turn>`: the supervisor's enqueue dedupes \
             onto the live lap, so two never run at once (X_JOB_DECLARATION_INVALID)"
        }
        "tenant" => {
            "a consumer belongs to no tenant: one lap at a time reads the whole source; keep a \
             tenant in the rows (X_JOB_DECLARATION_INVALID)"
        }
        "concurrency" => "a consumer runs one lap at a time already (X_JOB_DECLARATION_INVALID)",
        _ => return None,
    };
    Some(reason.to_owned())
}
