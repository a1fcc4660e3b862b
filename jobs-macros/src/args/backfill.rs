//! `#[backfill(..)]` and `#[ledger(..)]` as written.

use darling::FromMeta;
use proc_macro2::TokenStream;

use super::job::RetryArgs;
use super::shared::{arg_name, meta_list, voice, Raw};
use crate::errors::Errors;

/// The arguments of `#[backfill(..)]`. Every one is optional here: which are required is
/// decided by `crate::check::backfill`.
#[derive(Debug, Default, FromMeta)]
pub struct BackfillArgs {
    /// `name = "users.display-name"`: the durable key of the passes
    pub name: Option<Raw>,
    /// `tenant = none | per_tenant`
    pub tenant: Option<Raw>,
    /// `source = path::to::keyset_fn`
    pub source: Option<Raw>,
    /// `batch = 1000`
    pub batch: Option<Raw>,
    /// `rate = 5.0` (pages per second)
    pub rate: Option<Raw>,
    /// `queue = "backfills"`
    pub queue: Option<Raw>,
    /// `retry(..)`, as on `#[job]`
    pub retry: Option<RetryArgs>,
    /// `timeout = "1h"`
    pub timeout: Option<Raw>,
    /// `handle = FillDisplayName`
    pub handle: Option<Raw>,
    /// `crate = "::jobs"`
    #[darling(rename = "crate")]
    pub crate_path: Option<Raw>,
}

/// The arguments of `#[ledger(..)]`.
#[derive(Debug, Default, FromMeta)]
pub struct LedgerArgs {
    /// `name = "payments"`
    pub name: Option<Raw>,
    /// `tenant = none | per_tenant`
    pub tenant: Option<Raw>,
    /// `book = driver` or `book = path::to::fn`
    pub book: Option<Raw>,
    /// `queue = "ledger"`
    pub queue: Option<Raw>,
    /// `retry(..)`, as on `#[job]`
    pub retry: Option<RetryArgs>,
    /// `crate = "::jobs"`
    #[darling(rename = "crate")]
    pub crate_path: Option<Raw>,
}

const BACKFILL_ARGUMENTS: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "name", "tenant", "source", "batch", "rate", "queue", "retry", "timeout", "handle",
            "crate",
        ],
    ),
    (
        "retry",
        &["attempts", "backoff", "delay", "max_delay", "jitter"],
    ),
];

const LEDGER_ARGUMENTS: &[(&str, &[&str])] = &[
    ("", &["name", "tenant", "book", "queue", "retry", "crate"]),
    (
        "retry",
        &["attempts", "backoff", "delay", "max_delay", "jitter"],
    ),
];

/// What a backfill does not take, and why.
const BACKFILL_REFUSED: &[(&str, &str)] = &[
    (
        "key",
        "a backfill's idempotency key is its `name`: re-enqueueing a live pass is the same pass \
         (X_JOB_DECLARATION_INVALID)",
    ),
    (
        "concurrency",
        "a backfill runs one pass per name and tenant at a time already; pace it with `rate` \
         (X_JOB_DECLARATION_INVALID)",
    ),
    (
        "step_timeout",
        "a backfill's pages are its steps; bound a pass with `timeout` \
         (X_JOB_DECLARATION_INVALID)",
    ),
];

/// What a ledger does not take, and why.
const LEDGER_REFUSED: &[(&str, &str)] = &[(
    "key",
    "a ledger job's idempotency key is `<name>:<posting key>`, from the posting itself \
     (X_JOB_DECLARATION_INVALID)",
)];

fn parse<T: FromMeta>(
    tokens: TokenStream,
    errs: &mut Errors,
    attr: &str,
    arguments: &[(&str, &[&str])],
    refused: &[(&str, &str)],
) -> Option<T> {
    let items = match meta_list(tokens, attr) {
        Ok(items) => items,
        Err(err) => {
            errs.push(err);
            return None;
        }
    };
    let mut kept = Vec::with_capacity(items.len());
    for item in items {
        let reason = arg_name(&item)
            .and_then(|name| refused.iter().find(|(n, _)| *n == name).map(|(_, r)| *r));
        match reason {
            Some(reason) => errs.spanned(&item, reason),
            None => kept.push(item),
        }
    }
    errs.handle(T::from_list(&kept).map_err(|err| voice(err, attr, arguments).into()))
}

impl BackfillArgs {
    /// Parses the attribute's tokens; `None` when their shape was wrong.
    pub fn parse(tokens: TokenStream, errs: &mut Errors) -> Option<BackfillArgs> {
        parse(
            tokens,
            errs,
            "backfill",
            BACKFILL_ARGUMENTS,
            BACKFILL_REFUSED,
        )
    }
}

impl LedgerArgs {
    /// Parses the attribute's tokens; `None` when their shape was wrong.
    pub fn parse(tokens: TokenStream, errs: &mut Errors) -> Option<LedgerArgs> {
        parse(tokens, errs, "ledger", LEDGER_ARGUMENTS, LEDGER_REFUSED)
    }
}
