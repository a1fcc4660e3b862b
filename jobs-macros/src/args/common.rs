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

/// The names of the arguments an attribute takes at its top level, as the user writes them,
/// for the message that refuses an unknown one. darling still decides what is known (a name
/// missing here is accepted all the same, only not listed); `every_listed_name_is_known` checks
/// each name here is one darling reads.
pub trait ArgNames {
    /// Every argument's name, in the order the documentation presents them.
    const NAMES: &'static [&'static str];
}

/// What `retry(..)` takes.
pub const RETRY_NAMES: &[&str] = &["attempts", "backoff", "delay", "max_delay", "jitter"];

/// What `concurrency(..)` takes.
pub const CONCURRENCY_NAMES: &[&str] = &["key", "limit", "when_busy"];

/// What `rate(..)` takes.
pub const RATE_NAMES: &[&str] = &["limit", "per", "key"];

/// What `unique(..)` takes.
pub const UNIQUE_NAMES: &[&str] = &["for"];

/// darling's structural error in our words: an unknown argument lists the accepted names (and
/// keeps darling's near-miss suggestion), a duplicated one says to keep one; any other keeps
/// darling's own words. Each gains the declaration's code.
fn reword(error: &darling::Error, attr: &str, names: &[&str]) -> String {
    let text = error.to_string();
    // darling appends ` at <path>` for an argument inside a list, such as `retry(..)`.
    let (what, location) = match text.rsplit_once(" at ") {
        Some((what, location)) if !location.contains(' ') => (what, Some(location)),
        _ => (text.as_str(), None),
    };
    let (owner, names) = match location {
        None => (format!("`#[{attr}]`"), names),
        Some("retry") => ("`retry(..)`".to_string(), RETRY_NAMES),
        Some("concurrency") => ("`concurrency(..)`".to_string(), CONCURRENCY_NAMES),
        Some("rate") => ("`rate(..)`".to_string(), RATE_NAMES),
        Some("unique") => ("`unique(..)`".to_string(), UNIQUE_NAMES),
        Some(_) => return format!("{text} {CODE}"),
    };
    if let Some(rest) = what.strip_prefix("Unknown field: `") {
        let (unknown, rest) = rest.split_once('`').unwrap_or((rest, ""));
        let near = rest
            .strip_prefix(". Did you mean `")
            .and_then(|r| r.split_once('`'))
            .map(|(near, _)| format!("; did you mean `{near}`?"))
            .unwrap_or_else(|| ":".to_string());
        let listed: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        return format!(
            "{owner} takes no argument `{unknown}`{near} the arguments it takes are {} {CODE}",
            listed.join(", ")
        );
    }
    if let Some(rest) = what.strip_prefix("Duplicate field `") {
        let duplicated = rest.trim_end_matches('`');
        return format!("`{duplicated}` is given twice in {owner}: keep one {CODE}");
    }
    if matches!(location, Some("rate" | "unique")) {
        // `rate = ..` and `unique = ..`, refused in our words by `RateArgs` and `UniqueArgs`.
        return format!("{what} {CODE}");
    }
    format!("{text} {CODE}")
}

/// Reads the arguments of `#[attr]`. An argument the attribute refuses on purpose (`refused`
/// answers why, by name) is reported and left out, and the rest are still read. Every problem
/// goes into `errs`; `None` means the arguments' shape was wrong (an unknown, duplicated or
/// malformed argument), so which ones were given is not known.
pub fn parse<A: FromMeta + ArgNames>(
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
            // At darling's span, in our words where we have better ones (`reword`).
            for one in err.flatten() {
                errs.at(one.span(), reword(&one, attr, A::NAMES));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::backfill::{BackfillArgs, LedgerArgs};
    use crate::args::job::JobArgs;
    use crate::args::purge::PurgeArgs;
    use crate::args::task::TaskArgs;
    use crate::args::webhook::WebhookArgs;

    /// Whether darling reads `name` as an argument of `A` (a wrong value is fine; an unknown
    /// name is not).
    fn known<A: FromMeta>(name: &str) -> bool {
        let item: NestedMeta = syn::parse_str(&format!("{name} = 0")).unwrap();
        match A::from_list(&[item]) {
            Ok(_) => true,
            Err(err) => err
                .flatten()
                .into_iter()
                .all(|e| !e.to_string().starts_with("Unknown field")),
        }
    }

    fn every_name_of<A: FromMeta + ArgNames>() {
        for name in A::NAMES {
            assert!(known::<A>(name), "`{name}` is listed but not read");
        }
        assert!(!known::<A>("priority_boost"));
    }

    #[test]
    fn every_listed_name_is_known() {
        every_name_of::<JobArgs>();
        every_name_of::<TaskArgs>();
        every_name_of::<BackfillArgs>();
        every_name_of::<LedgerArgs>();
        every_name_of::<WebhookArgs>();
        every_name_of::<PurgeArgs>();
        for name in RETRY_NAMES {
            assert!(known::<RetryArgs>(name), "retry: `{name}`");
        }
        for name in CONCURRENCY_NAMES {
            assert!(
                known::<crate::args::job::KeyedConcurrencyArgs>(name),
                "concurrency: `{name}`"
            );
        }
        for name in RATE_NAMES {
            assert!(known::<crate::args::job::RateParts>(name), "rate: `{name}`");
        }
        for name in UNIQUE_NAMES {
            assert!(
                known::<crate::args::job::UniqueParts>(name),
                "unique: `{name}`"
            );
        }
    }

    #[test]
    fn unknown_and_duplicated_arguments_are_reworded() {
        let unknown = darling::Error::unknown_field_with_alts("qeue", &["queue", "key"]);
        assert_eq!(
            reword(&unknown, "job", &["key", "queue"]),
            "`#[job]` takes no argument `qeue`; did you mean `queue`? the arguments it takes \
             are `key`, `queue` (X_JOB_DECLARATION_INVALID)"
        );
        let nested = darling::Error::unknown_field("tries").at("retry");
        assert!(reword(&nested, "job", &[]).starts_with(
            "`retry(..)` takes no argument `tries`: the arguments it takes are `attempts`"
        ));
        let twice = darling::Error::duplicate_field("queue");
        assert_eq!(
            reword(&twice, "job", &[]),
            "`queue` is given twice in `#[job]`: keep one (X_JOB_DECLARATION_INVALID)"
        );
    }
}
