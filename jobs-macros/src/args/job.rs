//! `#[job(..)]` as written.

use darling::ast::NestedMeta;
use darling::FromMeta;
use proc_macro2::TokenStream;
use quote::ToTokens;

use super::shared::{arg_name, meta_list, voice, Raw};
use crate::errors::Errors;

/// The arguments of `#[job(..)]`. Every one is optional here: which are required, and what
/// each value means, is decided by `crate::model` and `crate::check`.
#[derive(Debug, Default, FromMeta)]
pub struct JobArgs {
    /// `key = "welcome:{user_id}"` or `key = <callable over &Input>`
    pub key: Option<Raw>,
    /// `tenant = <field>`, `tenant = none` or `tenant = <callable over &Input>`
    pub tenant: Option<Raw>,
    /// `name = "send-welcome"`
    pub name: Option<Raw>,
    /// `queue = "email"`
    pub queue: Option<Raw>,
    /// `retry(attempts = 5, backoff = exponential, delay = "1s", max_delay = "1h", jitter = equal)`
    pub retry: Option<RetryArgs>,
    /// `dead_letter = false`
    pub dead_letter: Option<Raw>,
    /// `timeout = "10m"`
    pub timeout: Option<Raw>,
    /// `step_timeout = "30s"`
    pub step_timeout: Option<Raw>,
    /// `event_poll = "30s"`
    pub event_poll: Option<Raw>,
    /// `concurrency = 3` or `concurrency(key = "{org_id}", limit = 1, when_busy = wait)`
    pub concurrency: Option<ConcurrencyArgs>,
    /// `on_settled = path::to::hook`
    pub on_settled: Option<Raw>,
    /// `handle = SendWelcome`
    pub handle: Option<Raw>,
    /// `crate = "::jobs"`
    #[darling(rename = "crate")]
    pub crate_path: Option<Raw>,
}

/// `retry(..)`.
#[derive(Debug, Default, FromMeta)]
pub struct RetryArgs {
    /// `attempts = 5`
    pub attempts: Option<Raw>,
    /// `backoff = exponential`
    pub backoff: Option<Raw>,
    /// `delay = "1s"`
    pub delay: Option<Raw>,
    /// `max_delay = "1h"`
    pub max_delay: Option<Raw>,
    /// `jitter = equal`
    pub jitter: Option<Raw>,
}

/// `concurrency = N` or `concurrency(..)`.
#[derive(Debug)]
pub enum ConcurrencyArgs {
    /// `concurrency = 3`: a fleet-wide cap.
    Plain(Raw),
    /// `concurrency(key = .., limit = .., when_busy = ..)`: a cap per key.
    Keyed(Box<KeyedConcurrencyArgs>),
}

/// `concurrency(key = "{org_id}", limit = 1, when_busy = wait)`.
#[derive(Debug, FromMeta)]
pub struct KeyedConcurrencyArgs {
    /// `key = "{org_id}"` or `key = <callable over &Input>`
    pub key: Option<Raw>,
    /// `limit = 1`
    pub limit: Option<Raw>,
    /// `when_busy = wait`
    pub when_busy: Option<Raw>,
    /// The whole `concurrency(..)` as written, for errors about what it lacks.
    #[darling(skip)]
    pub original: TokenStream,
}

impl FromMeta for ConcurrencyArgs {
    fn from_meta(item: &syn::Meta) -> darling::Result<Self> {
        match item {
            syn::Meta::List(list) => {
                let items = NestedMeta::parse_meta_list(list.tokens.clone())?;
                let mut keyed = KeyedConcurrencyArgs::from_list(&items)?;
                keyed.original = item.to_token_stream();
                Ok(ConcurrencyArgs::Keyed(Box::new(keyed)))
            }
            syn::Meta::NameValue(nv) => Raw::from_expr(&nv.value).map(ConcurrencyArgs::Plain),
            syn::Meta::Path(_) => Err(darling::Error::unsupported_format("word").with_span(item)),
        }
    }
}

/// The accepted arguments at each place, for "unknown argument" messages.
const ARGUMENTS: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "key",
            "tenant",
            "name",
            "queue",
            "retry",
            "dead_letter",
            "timeout",
            "step_timeout",
            "event_poll",
            "concurrency",
            "on_settled",
            "handle",
            "crate",
        ],
    ),
    (
        "retry",
        &["attempts", "backoff", "delay", "max_delay", "jitter"],
    ),
    ("concurrency", &["key", "limit", "when_busy"]),
];

/// Arguments people reach for that `#[job]` deliberately does not have, with the reason and
/// what to use instead (seed-inventory §2, §30 item 14).
const REFUSED: &[(&str, &str)] = &[
    (
        "priority",
        "`#[job]` has no `priority`: queues and per-queue worker slots are the prioritisation \
         mechanism; put urgent work on its own queue, e.g. `queue = \"urgent\"`, and give that \
         queue more worker slots (X_JOB_DECLARATION_INVALID)",
    ),
    (
        "rate_limit",
        "`#[job]` has no `rate_limit`: rate is limited per worker process, on the worker's \
         limiter; set the rate on the worker, or cap in-flight runs with `concurrency = N` \
         (X_JOB_DECLARATION_INVALID)",
    ),
];

impl JobArgs {
    /// Parses the attribute's tokens. Every problem goes into `errs`; `None` means the
    /// arguments' shape was wrong (an unknown, duplicated or malformed argument), and the
    /// arguments that did parse are not known.
    pub fn parse(tokens: TokenStream, errs: &mut Errors) -> Option<JobArgs> {
        let items = match meta_list(tokens, "job") {
            Ok(items) => items,
            Err(err) => {
                errs.push(err);
                return None;
            }
        };
        let mut kept = Vec::with_capacity(items.len());
        for item in items {
            match refused_reason(&item) {
                Some(reason) => {
                    // A refused argument leaves the rest intact: keep checking them.
                    errs.spanned(&item, reason);
                }
                None => kept.push(item),
            }
        }
        errs.handle(JobArgs::from_list(&kept).map_err(|err| voice(err, "job", ARGUMENTS).into()))
    }
}

fn refused_reason(item: &NestedMeta) -> Option<&'static str> {
    let ident = arg_name(item)?;
    REFUSED
        .iter()
        .find(|(name, _)| *name == ident)
        .map(|(_, reason)| *reason)
}
