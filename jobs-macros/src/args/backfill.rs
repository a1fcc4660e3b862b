//! `#[backfill(..)]` and `#[ledger(..)]` as written.

use super::common::ArgNames;
use darling::FromMeta;

use super::common::Delivery;
use crate::value::book::Book;
use crate::value::count::Count;
use crate::value::duration::DurationValue;
use crate::value::rails::{Environments, MigrationId};
use crate::value::rate::Rate;
use crate::value::scope::Scope;
use crate::value::text::{FnPath, TypeName};
use crate::value::Arg;

/// The arguments of `#[backfill(..)]`. Every one is optional here: which are required is
/// decided by `crate::check`.
#[derive(Debug, Default, FromMeta)]
pub struct BackfillArgs {
    /// `tenant = none | per_tenant`
    pub tenant: Option<Arg<Scope>>,
    /// `source = path::to::keyset_fn`
    pub source: Option<Arg<FnPath>>,
    /// `batch = 1000`
    pub batch: Option<Arg<Count>>,
    /// `rate = 5.0` (pages per second)
    pub rate: Option<Arg<Rate>>,
    /// `timeout = "1h"`
    pub timeout: Option<Arg<DurationValue>>,
    /// `handle = FillDisplayName`
    pub handle: Option<Arg<TypeName>>,
    /// `requires = "20261201093000_add_display_name"`
    pub requires: Option<Arg<MigrationId>>,
    /// `environments = ["staging", "production"]`
    pub environments: Option<Arg<Environments>>,
    /// `count = path::to::rows_left_fn`
    pub count: Option<Arg<FnPath>>,
    /// `queue`, `retry(..)`, `name` (the durable key of the passes), `crate`.
    #[darling(flatten)]
    pub delivery: Delivery,
}

impl ArgNames for BackfillArgs {
    const NAMES: &'static [&'static str] = &[
        "name",
        "tenant",
        "source",
        "batch",
        "rate",
        "queue",
        "retry",
        "timeout",
        "handle",
        "requires",
        "environments",
        "count",
        "crate",
    ];
}

/// The arguments of `#[ledger(..)]`.
#[derive(Debug, Default, FromMeta)]
pub struct LedgerArgs {
    /// `tenant = none | per_tenant`
    pub tenant: Option<Arg<Scope>>,
    /// `book = driver` or `book = path::to::fn`
    pub book: Option<Arg<Book>>,
    /// `queue`, `retry(..)`, `name`, `crate`.
    #[darling(flatten)]
    pub delivery: Delivery,
}

impl ArgNames for LedgerArgs {
    const NAMES: &'static [&'static str] = &["name", "tenant", "book", "queue", "retry", "crate"];
}

/// Why `#[backfill]` refuses the argument `arg`, if it does.
pub fn backfill_refused(arg: &str) -> Option<String> {
    let reason = match arg {
        "key" => {
            "a backfill's idempotency key is its `name`: re-enqueueing a live pass is the same \
             pass (X_JOB_DECLARATION_INVALID)"
        }
        "concurrency" => {
            "a backfill runs one pass per name and tenant at a time already; pace it with \
             `rate` (X_JOB_DECLARATION_INVALID)"
        }
        "step_timeout" => {
            "a backfill's pages are its steps; bound a pass with `timeout` \
             (X_JOB_DECLARATION_INVALID)"
        }
        _ => return None,
    };
    Some(reason.to_owned())
}

/// Why `#[ledger]` refuses the argument `arg`, if it does.
pub fn ledger_refused(arg: &str) -> Option<String> {
    (arg == "key").then(|| {
        "a ledger job's idempotency key is `<name>:<posting key>`, from the posting itself \
         (X_JOB_DECLARATION_INVALID)"
            .to_owned()
    })
}
