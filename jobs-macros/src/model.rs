//! The declaration a `#[job]` or `#[task]` stands for: the parsed arguments as typed values,
//! plus back-references to the user's fn and types so any later stage can blame the user's
//! tokens.
//!
//! Building the model is the parse stage: a value that does not parse records its error and is
//! left out, so one bad argument never hides another. Rules that need more than one argument,
//! or the fn itself, are in `crate::check`.

mod factory;

pub use factory::{vec_item, BackfillDecl, LedgerDecl};

use heck::ToUpperCamelCase;
use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::{FnArg, Ident, ItemFn, Path, ReturnType, Type};

use crate::args::job::{ConcurrencyArgs, JobArgs, KeyedConcurrencyArgs, RetryArgs};
use crate::args::task::TaskArgs;
use crate::errors::Errors;
use crate::value::backoff::Backoff;
use crate::value::catch_up::CatchUp;
use crate::value::count;
use crate::value::cron::{self, CronValue};
use crate::value::duration::{self, DurationValue};
use crate::value::jitter::Jitter;
use crate::value::key::KeySource;
use crate::value::tenant::Tenant;
use crate::value::text;
use crate::value::tz::{self, TzValue};
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
    /// `concurrency`, when declared and complete.
    pub concurrency: Option<Concurrency>,
    /// `on_settled = path`, when declared.
    pub on_settled: Option<Path>,
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
            concurrency: None,
            on_settled: None,
            handle: Ident::new(&fn_name.to_upper_camel_case(), item.sig.ident.span()),
            crate_path: syn::parse_quote!(::jobs),
        };
        let Some(args) = args else {
            return decl;
        };

        if let Some(raw) = &args.name {
            if let Some(name) = errs.handle(text::non_blank(&raw.0, "name")) {
                decl.name = name.value();
            }
        }
        if let Some(raw) = &args.queue {
            decl.queue = errs
                .handle(text::non_blank(&raw.0, "queue"))
                .map(|lit| lit.value());
        }
        if let Some(raw) = &args.key {
            decl.key = errs.handle(KeySource::parse(&raw.0, "key"));
        }
        if let Some(raw) = &args.tenant {
            decl.tenant = errs.handle(Tenant::parse(&raw.0));
        }
        if let Some(retry) = &args.retry {
            decl.retry = Retry::from_args(retry, errs);
        }
        if let Some(raw) = &args.dead_letter {
            decl.dead_letter = errs.handle(text::flag(&raw.0, "dead_letter"));
        }
        if let Some(raw) = &args.timeout {
            decl.timeout = errs.handle(duration::parse(
                &raw.0,
                "timeout",
                "leave `timeout` out for no ceiling on an attempt",
            ));
        }
        if let Some(raw) = &args.step_timeout {
            decl.step_timeout = errs.handle(duration::parse(
                &raw.0,
                "step_timeout",
                "leave `step_timeout` out for no ceiling on a step",
            ));
        }
        if let Some(raw) = &args.event_poll {
            decl.event_poll = errs.handle(duration::parse(
                &raw.0,
                "event_poll",
                "leave `event_poll` out to poll every 30s",
            ));
        }
        if let Some(concurrency) = &args.concurrency {
            decl.concurrency = Concurrency::from_args(concurrency, errs);
        }
        if let Some(raw) = &args.on_settled {
            decl.on_settled = errs.handle(text::fn_path(&raw.0, "on_settled"));
        }
        if let Some(raw) = &args.handle {
            if let Some(handle) = errs.handle(text::ident(&raw.0, "handle")) {
                decl.handle = handle;
            }
        }
        if let Some(raw) = &args.crate_path {
            if let Some(path) = errs.handle(text::crate_path(&raw.0)) {
                decl.crate_path = path;
            }
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
    fn from_args(args: &RetryArgs, errs: &mut Errors) -> Self {
        let mut retry = Retry::default();
        if let Some(raw) = &args.attempts {
            retry.attempts = errs.handle(count::positive(
                &raw.0,
                "attempts",
                "0 attempts means the job never runs; use `attempts = 1` for no retries",
            ));
        }
        if let Some(raw) = &args.backoff {
            retry.backoff = errs.handle(Backoff::parse(&raw.0));
        }
        if let Some(raw) = &args.delay {
            retry.delay = errs.handle(duration::parse(
                &raw.0,
                "delay",
                "use `backoff = fixed` for evenly spaced retries",
            ));
        }
        if let Some(raw) = &args.max_delay {
            retry.max_delay = errs.handle(duration::parse(
                &raw.0,
                "max_delay",
                "leave `max_delay` out for the 1h default",
            ));
        }
        if let Some(raw) = &args.jitter {
            retry.jitter = errs.handle(Jitter::parse(&raw.0));
        }
        retry
    }
}

impl Concurrency {
    fn from_args(args: &ConcurrencyArgs, errs: &mut Errors) -> Option<Self> {
        match args {
            // concurrency = N
            ConcurrencyArgs::Plain(raw) => errs
                .handle(count::positive(
                    &raw.0,
                    "concurrency",
                    "a cap of 0 would never run the job; leave `concurrency` out for no cap",
                ))
                .map(|limit| Concurrency::Plain { limit }),
            // concurrency(key = .., limit = .., when_busy = ..)
            ConcurrencyArgs::Keyed(keyed) => Self::keyed(keyed, errs),
        }
    }

    fn keyed(args: &KeyedConcurrencyArgs, errs: &mut Errors) -> Option<Self> {
        let key = match &args.key {
            Some(raw) => errs.handle(KeySource::parse(&raw.0, "concurrency(key)")),
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
            Some(raw) => errs.handle(count::positive(
                &raw.0,
                "limit",
                "a limit of 0 would never run the job; use `limit = 1` for one run per key",
            )),
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
            Some(raw) => errs.handle(WhenBusy::parse(&raw.0))?,
            None => WhenBusy::Wait,
        };
        Some(Concurrency::Keyed {
            key: key?,
            limit: limit?,
            when_busy,
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

        if let Some(raw) = &args.name {
            if let Some(name) = errs.handle(text::non_blank(&raw.0, "name")) {
                decl.name = name.value();
            }
        }
        if let Some(raw) = &args.cron {
            decl.cron = errs.handle(cron::parse(&raw.0));
        }
        if let Some(raw) = &args.tz {
            decl.tz = errs.handle(tz::parse(&raw.0));
        }
        if let Some(raw) = &args.catch_up {
            decl.catch_up = errs.handle(CatchUp::parse(&raw.0));
        }
        if let Some(raw) = &args.max_catch_up {
            decl.max_catch_up = errs.handle(count::positive(
                &raw.0,
                "max_catch_up",
                "`catch_up = run_all` would fire no missed occurrence; leave `max_catch_up` \
                 out for the default of 10 per round",
            ));
        }
        if let Some(raw) = &args.handle {
            if let Some(handle) = errs.handle(text::ident(&raw.0, "handle")) {
                decl.handle = handle;
            }
        }
        if let Some(raw) = &args.crate_path {
            if let Some(path) = errs.handle(text::crate_path(&raw.0)) {
                decl.crate_path = path;
            }
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
