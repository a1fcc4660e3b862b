//! `#[job(..)]` as written.

use super::common::ArgNames;
use darling::ast::NestedMeta;
use darling::FromMeta;
use proc_macro2::TokenStream;
use quote::ToTokens;

use super::common::Delivery;
use crate::value::count::Count;
use crate::value::dependency_failure::DependencyFailure;
use crate::value::duration::{DurationValue, UniquePeriod};
use crate::value::key::KeySource;
use crate::value::priority::Priority;
use crate::value::tenant::Tenant;
use crate::value::text::{Flag, FnPath, Switch, TypeName};
use crate::value::when_busy::WhenBusy;
use crate::value::Arg;

/// The arguments of `#[job(..)]`. Every one is optional here: which are required is decided by
/// `crate::check`.
#[derive(Debug, Default, FromMeta)]
pub struct JobArgs {
    /// `key = "welcome:{user_id}"` or `key = <callable over &Input>`
    pub key: Option<Arg<KeySource>>,
    /// `tenant = <field>`, `tenant = none` or `tenant = <callable over &Input>`
    pub tenant: Option<Arg<Tenant>>,
    /// `dead_letter = false`
    pub dead_letter: Option<Arg<Flag>>,
    /// `timeout = "10m"`
    pub timeout: Option<Arg<DurationValue>>,
    /// `step_timeout = "30s"`
    pub step_timeout: Option<Arg<DurationValue>>,
    /// `event_poll = "30s"`
    pub event_poll: Option<Arg<DurationValue>>,
    /// `expires_in = "10m"`
    pub expires_in: Option<Arg<DurationValue>>,
    /// `debounce = "5s"`
    pub debounce: Option<Arg<DurationValue>>,
    /// `unique(for = "1h")`
    pub unique: Option<UniqueArgs>,
    /// `concurrency = 3` or `concurrency(key = "{org_id}", limit = 1, when_busy = wait)`
    pub concurrency: Option<ConcurrencyArgs>,
    /// `rate(limit = 100, per = "1m")` or `rate(limit = 100, per = "1m", key = "{customer_id}")`
    pub rate: Option<RateArgs>,
    /// `on_settled = path::to::hook`
    pub on_settled: Option<Arg<FnPath>>,
    /// `keep_result`: store the body's `Ok` value with the job
    pub keep_result: Option<Arg<Switch>>,
    /// `handle = SendWelcome`
    pub handle: Option<Arg<TypeName>>,
    /// `priority = 2`: -5..=5, default 0; higher is claimed first within a tenant's turn
    pub priority: Option<Arg<Priority>>,
    /// `on_dependency_failure = run_anyway`: what an enqueue with dependencies does when one fails
    pub on_dependency_failure: Option<Arg<DependencyFailure>>,
    /// `queue`, `retry(..)`, `name`, `crate`.
    #[darling(flatten)]
    pub delivery: Delivery,
}

impl ArgNames for JobArgs {
    const NAMES: &'static [&'static str] = &[
        "key",
        "tenant",
        "name",
        "queue",
        "retry",
        "concurrency",
        "rate",
        "timeout",
        "step_timeout",
        "event_poll",
        "expires_in",
        "debounce",
        "unique",
        "dead_letter",
        "priority",
        "on_dependency_failure",
        "on_settled",
        "keep_result",
        "handle",
        "crate",
    ];
}

/// `concurrency = N` or `concurrency(..)`.
#[derive(Debug)]
pub enum ConcurrencyArgs {
    /// `concurrency = 3`: a fleet-wide cap.
    Plain(Arg<Count>),
    /// `concurrency(key = .., limit = .., when_busy = ..)`: a cap per key.
    Keyed(Box<KeyedConcurrencyArgs>),
}

/// `concurrency(key = "{org_id}", limit = 1, when_busy = wait)`.
#[derive(Debug, FromMeta)]
pub struct KeyedConcurrencyArgs {
    /// `key = "{org_id}"` or `key = <callable over &Input>`
    pub key: Option<Arg<KeySource>>,
    /// `limit = 1`
    pub limit: Option<Arg<Count>>,
    /// `when_busy = wait`
    pub when_busy: Option<Arg<WhenBusy>>,
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
            _ => Arg::from_meta(item).map(ConcurrencyArgs::Plain),
        }
    }
}

/// `rate(limit = 100, per = "1m", key = "{customer_id}")`: starts per window, fleet-wide.
#[derive(Debug)]
pub struct RateArgs {
    /// `limit = 100`
    pub limit: Option<Arg<Count>>,
    /// `per = "1m"`
    pub per: Option<Arg<DurationValue>>,
    /// `key = "{customer_id}"` or `key = <callable over &Input>`
    pub key: Option<Arg<KeySource>>,
    /// The whole `rate(..)` as written, for errors about what it lacks.
    pub original: TokenStream,
}

/// The arguments inside `rate(..)`, as darling reads them.
#[derive(FromMeta)]
pub struct RateParts {
    /// `limit = 100`
    pub limit: Option<Arg<Count>>,
    /// `per = "1m"`
    pub per: Option<Arg<DurationValue>>,
    /// `key = "{customer_id}"`
    pub key: Option<Arg<KeySource>>,
}

impl FromMeta for RateArgs {
    /// Reads `rate(..)`; `rate = ..` is refused with the shape to write.
    fn from_meta(item: &syn::Meta) -> darling::Result<Self> {
        match item {
            syn::Meta::List(list) => {
                let items = NestedMeta::parse_meta_list(list.tokens.clone())?;
                let RateParts { limit, per, key } = RateParts::from_list(&items)?;
                Ok(RateArgs {
                    limit,
                    per,
                    key,
                    original: item.to_token_stream(),
                })
            }
            _ => Err(darling::Error::custom(
                "`rate` takes a limit and its window: write `rate(limit = 100, per = \"1m\")`, \
                 or `rate(limit = 100, per = \"1m\", key = \"{customer_id}\")` per key",
            )
            .with_span(item)),
        }
    }
}

/// `unique(for = "1h")`: the job holds its key for the period after its enqueue, finished or
/// not. `for` is a keyword, which darling reads as any other name inside the list.
#[derive(Debug)]
pub struct UniqueArgs {
    /// `for = "1h"`
    pub period: Option<Arg<UniquePeriod>>,
    /// The whole `unique(..)` as written, for errors about what it lacks.
    pub original: TokenStream,
}

/// The arguments inside `unique(..)`, as darling reads them.
#[derive(FromMeta)]
pub struct UniqueParts {
    /// `for = "1h"`
    #[darling(rename = "for")]
    pub period: Option<Arg<UniquePeriod>>,
}

impl FromMeta for UniqueArgs {
    /// Reads `unique(..)`; `unique = ..` and a bare `unique` are refused with the shape to write.
    fn from_meta(item: &syn::Meta) -> darling::Result<Self> {
        match item {
            syn::Meta::List(list) => {
                let items = NestedMeta::parse_meta_list(list.tokens.clone())?;
                let UniqueParts { period } = UniqueParts::from_list(&items)?;
                Ok(UniqueArgs {
                    period,
                    original: item.to_token_stream(),
                })
            }
            _ => Err(darling::Error::custom(
                "`unique` takes its period: write `unique(for = \"1h\")` to answer every \
                 enqueue of a key within an hour of its job's enqueue with that job, finished \
                 or not",
            )
            .with_span(item)),
        }
    }
}

/// Arguments people reach for that `#[job]` deliberately does not have: the reason and what to
/// use instead (seed-inventory §2, §30 item 14).
pub fn refused(arg: &str) -> Option<String> {
    let reason = match arg {
        "rate_limit" => {
            "`#[job]` has no `rate_limit`: limit starts per window fleet-wide with \
             `rate(limit = 100, per = \"1m\")` (per key with `key = \"{customer_id}\"`), or \
             cap in-flight runs with `concurrency = N` (X_JOB_DECLARATION_INVALID)"
        }
        _ => return None,
    };
    Some(reason.to_owned())
}
