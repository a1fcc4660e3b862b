//! The declaration a `#[job]` or `#[task]` stands for: the parsed arguments as typed values,
//! plus back-references to the user's fn and types so any later stage can blame the user's
//! tokens.
//!
//! darling has already read every value (`crate::args`); building the model applies the
//! defaults and records each value that did not read, leaving it out, so one bad argument
//! never hides another. Rules that need more than one argument, or the fn itself, are in
//! `crate::check`.

mod consumer;
mod factory;
mod purge;
mod webhook;

pub use consumer::ConsumerDecl;
pub use factory::{vec_item, BackfillDecl, LedgerDecl, PagedDecl};
pub use purge::{PartitionsDecl, PassDecl, PassKind, PurgeDecl, ScheduledPass};
pub use webhook::WebhookDecl;

use heck::ToUpperCamelCase;
use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::{FnArg, Ident, ItemFn, Path, ReturnType, Type};

use crate::args::common::RetryArgs;
use crate::args::job::{ConcurrencyArgs, JobArgs, KeyedConcurrencyArgs, RateArgs, UniqueArgs};
use crate::args::task::TaskArgs;
use crate::errors::Errors;
use crate::value::backoff::Backoff;
use crate::value::catch_up::CatchUp;
use crate::value::cron::CronValue;
use crate::value::dependency_failure::DependencyFailure;
use crate::value::duration::DurationValue;
use crate::value::jitter::Jitter;
use crate::value::key::KeySource;
use crate::value::tenant::Tenant;
use crate::value::tz::TzValue;
use crate::value::when_busy::WhenBusy;

/// One `#[job]` declaration.
pub struct JobDecl<'a> {
    /// The user's fn, emitted unchanged.
    pub item: &'a ItemFn,
    /// The arguments as written; `None` when their shape was wrong (an unknown, duplicated or
    /// malformed argument), in which case which ones were given is not known.
    pub args: Option<&'a JobArgs>,
    /// The durable name (`name = ..`, else the fn's name).
    pub name: String,
    /// `queue = ..`, when declared.
    pub queue: Option<String>,
    /// `key = ..`, when declared and valid.
    pub key: Option<KeySource>,
    /// `tenant = ..`, when declared and valid.
    pub tenant: Option<Tenant>,
    /// `retry(..)`: only the parts declared.
    pub retry: Retry,
    /// `dead_letter = ..`, when declared.
    pub dead_letter: Option<bool>,
    /// `timeout = ..`, when declared.
    pub timeout: Option<DurationValue>,
    /// `step_timeout = ..`, when declared.
    pub step_timeout: Option<DurationValue>,
    /// `event_poll = ..`, when declared.
    pub event_poll: Option<DurationValue>,
    /// `expires_in = ..`, when declared.
    pub expires_in: Option<DurationValue>,
    /// `debounce = ..`, when declared.
    pub debounce: Option<DurationValue>,
    /// `unique(for = ..)`, when declared with a period that reads.
    pub unique_for: Option<DurationValue>,
    /// `concurrency`, when declared and complete.
    pub concurrency: Option<Concurrency>,
    /// `rate(..)`, when declared and complete.
    pub rate: Option<RateDecl>,
    /// `on_settled = path`, when declared.
    pub on_settled: Option<Path>,
    /// `keep_result`: the body's `Ok` value is stored with the job.
    pub keep_result: bool,
    /// `priority = N`, when declared and a number (its range is a rule in `check/`).
    pub priority: Option<i64>,
    /// `on_dependency_failure = ..`, when declared.
    pub on_dependency_failure: Option<DependencyFailure>,
    /// The generated handle type's name.
    pub handle: Ident,
    /// The runtime crate (`crate = ..`, else `::jobs`).
    pub crate_path: Path,
}

/// `retry(..)`: `None` is "not declared", so the runtime's default stands.
#[derive(Default)]
pub struct Retry {
    /// `attempts = N`.
    pub attempts: Option<u32>,
    /// `backoff = ..`.
    pub backoff: Option<Backoff>,
    /// `delay = ".."`.
    pub delay: Option<DurationValue>,
    /// `max_delay = ".."`.
    pub max_delay: Option<DurationValue>,
    /// `jitter = ..`.
    pub jitter: Option<Jitter>,
}

/// A declared cap on in-flight runs.
pub enum Concurrency {
    /// `concurrency = N`: fleet-wide.
    Plain {
        /// N.
        limit: u32,
    },
    /// `concurrency(key = .., limit = .., when_busy = ..)`: per key.
    Keyed {
        /// The key each run counts under.
        key: KeySource,
        /// Runs allowed at once per key.
        limit: u32,
        /// What a run does when its key is full.
        when_busy: WhenBusy,
    },
}

/// A declared limit on starts per window: `rate(limit = .., per = .., key = ..)`.
pub struct RateDecl {
    /// Starts allowed per window (per key when keyed).
    pub limit: u32,
    /// The window.
    pub per: DurationValue,
    /// The key each start counts under, when per key.
    pub key: Option<KeySource>,
}

impl<'a> JobDecl<'a> {
    /// Builds the model of `item` under `args`, recording every value that does not parse.
    pub fn from_ast(errs: &mut Errors, item: &'a ItemFn, args: Option<&'a JobArgs>) -> Self {
        let fn_name = item.sig.ident.unraw().to_string();
        let mut decl = JobDecl {
            item,
            args,
            name: fn_name.clone(),
            queue: None,
            key: None,
            tenant: None,
            retry: Retry::default(),
            dead_letter: None,
            timeout: None,
            step_timeout: None,
            event_poll: None,
            expires_in: None,
            debounce: None,
            unique_for: None,
            concurrency: None,
            rate: None,
            on_settled: None,
            keep_result: false,
            priority: None,
            on_dependency_failure: None,
            handle: Ident::new(&fn_name.to_upper_camel_case(), item.sig.ident.span()),
            crate_path: syn::parse_quote!(::jobs),
        };
        let Some(args) = args else {
            return decl;
        };

        let delivery = &args.delivery;
        if let Some(name) = errs.value(&delivery.common.name) {
            decl.name = name.0;
        }
        decl.queue = errs.value(&delivery.queue).map(|queue| queue.0);
        decl.key = errs.value(&args.key);
        decl.tenant = errs.value(&args.tenant);
        if let Some(retry) = &delivery.retry {
            decl.retry = Retry::from_args(retry, errs);
        }
        decl.dead_letter = errs.value(&args.dead_letter).map(|flag| flag.0);
        decl.timeout = errs.value(&args.timeout);
        decl.step_timeout = errs.value(&args.step_timeout);
        decl.event_poll = errs.value(&args.event_poll);
        decl.expires_in = errs.value(&args.expires_in);
        decl.debounce = errs.value(&args.debounce);
        if let Some(unique) = &args.unique {
            decl.unique_for = unique_period(unique, errs);
        }
        if let Some(concurrency) = &args.concurrency {
            decl.concurrency = Concurrency::from_args(concurrency, errs);
        }
        if let Some(rate) = &args.rate {
            decl.rate = RateDecl::from_args(rate, errs);
        }
        decl.on_settled = errs.value(&args.on_settled).map(|path| path.0);
        decl.keep_result = errs.value(&args.keep_result).is_some_and(|switch| switch.0);
        decl.priority = errs.value(&args.priority).map(|priority| priority.0);
        decl.on_dependency_failure = errs.value(&args.on_dependency_failure);
        if let Some(handle) = errs.value(&args.handle) {
            decl.handle = handle.0;
        }
        if let Some(path) = errs.value(&delivery.common.crate_path) {
            decl.crate_path = path.0;
        }
        decl
    }

    /// The fn's parameters that are not `self`, in order.
    pub fn params(&self) -> impl Iterator<Item = &'a syn::PatType> {
        self.item.sig.inputs.iter().filter_map(|arg| match arg {
            FnArg::Typed(pat) => Some(pat),
            FnArg::Receiver(_) => None,
        })
    }

    /// The input type: the second parameter's.
    pub fn input_ty(&self) -> Option<&'a Type> {
        self.params().nth(1).map(|pat| &*pat.ty)
    }

    /// The run context's type: the first parameter's.
    pub fn run_ty(&self) -> Option<&'a Type> {
        self.params().next().map(|pat| &*pat.ty)
    }

    /// The return type as written.
    pub fn output_ty(&self) -> Option<&'a Type> {
        match &self.item.sig.output {
            ReturnType::Type(_, ty) => Some(ty),
            ReturnType::Default => None,
        }
    }

    /// The attribute itself, for errors about what it lacks.
    pub fn attr_span(&self) -> Span {
        Span::call_site()
    }
}

impl Retry {
    /// The declared parts of `retry(..)`, recording every value that does not read.
    pub fn from_args(args: &RetryArgs, errs: &mut Errors) -> Self {
        Retry {
            attempts: errs.value(&args.attempts).map(|count| count.0),
            backoff: errs.value(&args.backoff),
            delay: errs.value(&args.delay),
            max_delay: errs.value(&args.max_delay),
            jitter: errs.value(&args.jitter),
        }
    }
}

/// The period of `unique(..)`, recording a missing or unreadable one.
fn unique_period(args: &UniqueArgs, errs: &mut Errors) -> Option<DurationValue> {
    if args.period.is_none() {
        errs.spanned(
            &args.original,
            "`unique(..)` needs its period: write `unique(for = \"1h\")` to hold the key for an \
             hour after each enqueue (X_JOB_DECLARATION_INVALID)",
        );
        return None;
    }
    errs.value(&args.period).map(|period| period.0)
}

impl Concurrency {
    fn from_args(args: &ConcurrencyArgs, errs: &mut Errors) -> Option<Self> {
        match args {
            // concurrency = N
            ConcurrencyArgs::Plain(limit) => errs
                .arg(limit)
                .map(|limit| Concurrency::Plain { limit: limit.0 }),
            // concurrency(key = .., limit = .., when_busy = ..)
            ConcurrencyArgs::Keyed(keyed) => Self::keyed(keyed, errs),
        }
    }

    fn keyed(args: &KeyedConcurrencyArgs, errs: &mut Errors) -> Option<Self> {
        let key = match &args.key {
            Some(_) => errs.value(&args.key),
            None => {
                errs.spanned(
                    &args.original,
                    "keyed `concurrency(..)` needs `key = \"<template over the input's \
                     fields>\"`; for a fleet-wide cap write `concurrency = N` \
                     (X_JOB_DECLARATION_INVALID)",
                );
                None
            }
        };
        let limit = match &args.limit {
            Some(_) => errs.value(&args.limit).map(|limit| limit.0),
            None => {
                errs.spanned(
                    &args.original,
                    "keyed `concurrency(..)` needs a `limit`: add `limit = 1` for one run per \
                     key at a time (X_JOB_DECLARATION_INVALID)",
                );
                None
            }
        };
        let when_busy = match &args.when_busy {
            Some(_) => errs.value(&args.when_busy)?,
            None => WhenBusy::Wait,
        };
        Some(Concurrency::Keyed {
            key: key?,
            limit: limit?,
            when_busy,
        })
    }
}

impl RateDecl {
    fn from_args(args: &RateArgs, errs: &mut Errors) -> Option<Self> {
        let limit = match &args.limit {
            Some(_) => errs.value(&args.limit).map(|limit| limit.0),
            None => {
                errs.spanned(
                    &args.original,
                    "`rate(..)` needs a `limit`: add `limit = 100` for at most 100 starts per \
                     window (X_JOB_DECLARATION_INVALID)",
                );
                None
            }
        };
        let per = match &args.per {
            Some(_) => errs.value(&args.per),
            None => {
                errs.spanned(
                    &args.original,
                    "`rate(..)` needs its window: add `per = \"1m\"` for a limit per minute \
                     (X_JOB_DECLARATION_INVALID)",
                );
                None
            }
        };
        let key = match &args.key {
            Some(_) => Some(errs.value(&args.key)?),
            None => None,
        };
        Some(RateDecl {
            limit: limit?,
            per: per?,
            key,
        })
    }
}

/// One `#[task]` declaration.
pub struct TaskDecl<'a> {
    /// The user's fn, emitted unchanged.
    pub item: &'a ItemFn,
    /// The arguments as written; `None` when their shape was wrong (an unknown, duplicated or
    /// malformed argument), in which case which ones were given is not known.
    pub args: Option<&'a TaskArgs>,
    /// The durable name (`name = ..`, else the fn's name).
    pub name: String,
    /// `cron = ..`, when declared and valid.
    pub cron: Option<CronValue>,
    /// `tz = ..`, when declared and valid.
    pub tz: Option<TzValue>,
    /// `catch_up = ..`, when declared.
    pub catch_up: Option<CatchUp>,
    /// `max_catch_up = N`, when declared.
    pub max_catch_up: Option<u32>,
    /// The generated handle type's name.
    pub handle: Ident,
    /// The runtime crate (`crate = ..`, else `::jobs`).
    pub crate_path: Path,
}

impl<'a> TaskDecl<'a> {
    /// Builds the model of `item` under `args`, recording every value that does not parse.
    pub fn from_ast(errs: &mut Errors, item: &'a ItemFn, args: Option<&'a TaskArgs>) -> Self {
        let fn_name = item.sig.ident.unraw().to_string();
        let mut decl = TaskDecl {
            item,
            args,
            name: fn_name.clone(),
            cron: None,
            tz: None,
            catch_up: None,
            max_catch_up: None,
            handle: Ident::new(&fn_name.to_upper_camel_case(), item.sig.ident.span()),
            crate_path: syn::parse_quote!(::jobs),
        };
        let Some(args) = args else {
            return decl;
        };

        if let Some(name) = errs.value(&args.common.name) {
            decl.name = name.0;
        }
        decl.cron = errs.value(&args.cron);
        decl.tz = errs.value(&args.tz);
        decl.catch_up = errs.value(&args.catch_up);
        decl.max_catch_up = errs.value(&args.max_catch_up).map(|count| count.0);
        if let Some(handle) = errs.value(&args.handle) {
            decl.handle = handle.0;
        }
        if let Some(path) = errs.value(&args.common.crate_path) {
            decl.crate_path = path.0;
        }
        decl
    }

    /// The occurrence parameter's type: the only parameter's.
    pub fn occurrence_ty(&self) -> Option<&'a Type> {
        match self.item.sig.inputs.first() {
            Some(FnArg::Typed(pat)) => Some(&pat.ty),
            _ => None,
        }
    }

    /// The return type as written.
    pub fn output_ty(&self) -> Option<&'a Type> {
        match &self.item.sig.output {
            ReturnType::Type(_, ty) => Some(ty),
            ReturnType::Default => None,
        }
    }

    /// The attribute itself, for errors about what it lacks.
    pub fn attr_span(&self) -> Span {
        Span::call_site()
    }
}
