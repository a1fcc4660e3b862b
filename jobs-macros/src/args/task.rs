//! `#[task(..)]` as written.

use darling::FromMeta;
use proc_macro2::TokenStream;

use super::shared::{arg_name, meta_list, voice, Raw};
use crate::errors::Errors;

/// The arguments of `#[task(..)]`. Every one is optional here: which are required, and what
/// each value means, is decided by `crate::model` and `crate::check`.
#[derive(Debug, Default, FromMeta)]
pub struct TaskArgs {
    /// `name = "nightly"`
    pub name: Option<Raw>,
    /// `cron = "0 9 * * 1-5"`
    pub cron: Option<Raw>,
    /// `tz = "Europe/Paris"`
    pub tz: Option<Raw>,
    /// `catch_up = skip | run_once | run_all` (or `"skip"`, `"run-once"`, `"run-all"`)
    pub catch_up: Option<Raw>,
    /// `max_catch_up = 5`
    pub max_catch_up: Option<Raw>,
    /// `handle = WeekdayDigest`
    pub handle: Option<Raw>,
    /// `crate = "::jobs"`
    #[darling(rename = "crate")]
    pub crate_path: Option<Raw>,
}

/// The accepted arguments, for "unknown argument" messages.
const ARGUMENTS: &[(&str, &[&str])] = &[(
    "",
    &[
        "cron",
        "tz",
        "name",
        "catch_up",
        "max_catch_up",
        "handle",
        "crate",
    ],
)];

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

impl TaskArgs {
    /// Parses the attribute's tokens. Every problem goes into `errs`; `None` means the
    /// arguments' shape was wrong (an unknown, duplicated or malformed argument), and the
    /// arguments that did parse are not known.
    pub fn parse(tokens: TokenStream, errs: &mut Errors) -> Option<TaskArgs> {
        let items = match meta_list(tokens, "task") {
            Ok(items) => items,
            Err(err) => {
                errs.push(err);
                return None;
            }
        };
        let mut kept = Vec::with_capacity(items.len());
        for item in items {
            match arg_name(&item).filter(|name| BODY_OPTIONS.contains(&name.as_str())) {
                // A refused argument leaves the rest intact: keep checking them.
                Some(name) => errs.spanned(
                    &item,
                    format!(
                        "a task never runs a body: `{name}` belongs on the `#[job]` the task \
                         enqueues (X_JOB_DECLARATION_INVALID)"
                    ),
                ),
                None => kept.push(item),
            }
        }
        errs.handle(TaskArgs::from_list(&kept).map_err(|err| voice(err, "task", ARGUMENTS).into()))
    }
}
