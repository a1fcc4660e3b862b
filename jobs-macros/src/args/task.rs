//! `#[task(..)]` as written.

use super::common::ArgNames;
use darling::FromMeta;

use super::common::Common;
use crate::value::catch_up::CatchUp;
use crate::value::count::Count;
use crate::value::cron::CronValue;
use crate::value::text::TypeName;
use crate::value::tz::TzValue;
use crate::value::Arg;

/// The arguments of `#[task(..)]`. Every one is optional here: which are required is decided by
/// `crate::check`.
#[derive(Debug, Default, FromMeta)]
pub struct TaskArgs {
    /// `cron = "0 9 * * 1-5"`
    pub cron: Option<Arg<CronValue>>,
    /// `tz = "Europe/Paris"`
    pub tz: Option<Arg<TzValue>>,
    /// `catch_up = skip | run_once | run_all` (or `"skip"`, `"run-once"`, `"run-all"`)
    pub catch_up: Option<Arg<CatchUp>>,
    /// `max_catch_up = 5`
    pub max_catch_up: Option<Arg<Count>>,
    /// `handle = WeekdayDigest`
    pub handle: Option<Arg<TypeName>>,
    /// `name`, `crate`.
    #[darling(flatten)]
    pub common: Common,
}

impl ArgNames for TaskArgs {
    const NAMES: &'static [&'static str] = &[
        "cron",
        "tz",
        "catch_up",
        "max_catch_up",
        "name",
        "handle",
        "crate",
    ];
}

/// Options of a job's body. A task only enqueues (seed-inventory §12, §30 item 19), so each is
/// refused with a pointer to where it belongs.
const BODY_OPTIONS: &[&str] = &[
    "retry",
    "timeout",
    "step_timeout",
    "event_poll",
    "concurrency",
    "queue",
    "dead_letter",
    "key",
    "tenant",
    "on_settled",
];

/// Why `#[task]` refuses the argument `arg`, if it does.
pub fn refused(arg: &str) -> Option<String> {
    BODY_OPTIONS.contains(&arg).then(|| {
        format!(
            "a task never runs a body: `{arg}` belongs on the `#[job]` the task enqueues \
             (X_JOB_DECLARATION_INVALID)"
        )
    })
}
