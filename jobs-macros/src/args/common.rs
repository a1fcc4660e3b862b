//! What the attributes' arguments share: the common arguments, flattened into each attribute's
//! struct, and the one parse every attribute goes through.

use darling::ast::NestedMeta;
use darling::FromMeta;
use proc_macro2::TokenStream;

use crate::errors::Errors;
use crate::value::backoff::Backoff;
use crate::value::count::Count;
use crate::value::duration::DurationValue;
use crate::value::jitter::Jitter;
use crate::value::text::{CratePath, Text, TypeName};
use crate::value::Arg;

/// What every attribute takes.
#[derive(Debug, Default, FromMeta)]
pub struct Common {
    /// `name = "send-welcome"`: the durable name.
    pub name: Option<Arg<Text>>,
    /// `crate = "::jobs"`: the runtime crate's path.
    #[darling(rename = "crate")]
    pub crate_path: Option<Arg<CratePath>>,
}

/// What every attribute that declares a job takes (`#[job]`, `#[backfill]`, `#[ledger]`):
/// where its runs queue and how they retry, on top of [`Common`].
#[derive(Debug, Default, FromMeta)]
pub struct Delivery {
    /// `queue = "email"`
    pub queue: Option<Arg<Text>>,
    /// `retry(attempts = 5, backoff = exponential, delay = "1s", max_delay = "1h", jitter = equal)`
    pub retry: Option<RetryArgs>,
    /// `name`, `crate`.
    #[darling(flatten)]
    pub common: Common,
}

/// `retry(..)`.
#[derive(Debug, Default, FromMeta)]
pub struct RetryArgs {
    /// `attempts = 5`
    pub attempts: Option<Arg<Count>>,
    /// `backoff = exponential`
    pub backoff: Option<Arg<Backoff>>,
    /// `delay = "1s"`
    pub delay: Option<Arg<DurationValue>>,
    /// `max_delay = "1h"`
    pub max_delay: Option<Arg<DurationValue>>,
    /// `jitter = equal`
    pub jitter: Option<Arg<Jitter>>,
}

/// The code every structural refusal carries: the declaration cannot be honoured as written.
const CODE: &str = "(X_JOB_DECLARATION_INVALID)";

/// Reads the arguments of `#[attr]`. An argument the attribute refuses on purpose (`refused`
/// answers why, by name) is reported and left out, and the rest are still read. Every problem
/// goes into `errs`; `None` means the arguments' shape was wrong (an unknown, duplicated or
/// malformed argument), so which ones were given is not known.
pub fn parse<A: FromMeta>(
    tokens: TokenStream,
    attr: &str,
    refused: impl Fn(&str) -> Option<String>,
    errs: &mut Errors,
) -> Option<A> {
    let items = match NestedMeta::parse_meta_list(tokens) {
        Ok(items) => items,
        Err(err) => {
            errs.at(
                err.span(),
                format!(
                    "cannot read the arguments of `#[{attr}]`: {err}; write them as \
                     `name = value` pairs separated by commas {CODE}"
                ),
            );
            return None;
        }
    };
    let mut kept = Vec::with_capacity(items.len());
    for item in items {
        match arg_name(&item).and_then(|name| refused(&name)) {
            // A refused argument leaves the rest intact: keep checking them.
            Some(reason) => errs.spanned(&item, reason),
            None => kept.push(item),
        }
    }
    match A::from_list(&kept) {
        Ok(args) => Some(args),
        Err(err) => {
            // darling's own words, at darling's span, with the code added.
            for one in err.flatten() {
                errs.at(one.span(), format!("{one} {CODE}"));
            }
            None
        }
    }
}

/// `handle = ..` and `crate = ..` read from arguments that did not all parse, so a refused
/// declaration still names its stand-in handle as the user did.
pub fn recover_names(tokens: TokenStream) -> (Option<syn::Ident>, Option<syn::Path>) {
    let Ok(items) = NestedMeta::parse_meta_list(tokens) else {
        return (None, None);
    };
    let mut handle = None;
    let mut krate = None;
    for item in &items {
        let NestedMeta::Meta(meta) = item else {
            continue;
        };
        if meta.path().is_ident("handle") {
            handle = Arg::<TypeName>::from_meta(meta)
                .ok()
                .and_then(|arg| arg.ok().map(|name| name.0.clone()));
        } else if meta.path().is_ident("crate") {
            krate = Arg::<CratePath>::from_meta(meta)
                .ok()
                .and_then(|arg| arg.ok().map(|path| path.0.clone()));
        }
    }
    (handle, krate)
}

/// The name of an argument (`priority` in `priority = 1`, `retry` in `retry(..)`), if it is a
/// plain identifier.
fn arg_name(item: &NestedMeta) -> Option<String> {
    let NestedMeta::Meta(meta) = item else {
        return None;
    };
    meta.path().get_ident().map(ToString::to_string)
}
