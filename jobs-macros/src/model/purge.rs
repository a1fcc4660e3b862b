//! The declaration `#[purge]` and `#[partitions]` stand for: a maintenance job (one pass over
//! what its fn builds: a purge's targets, the tables whose partitions are kept) and the cron
//! task that fires it. [`ScheduledPass`] is what differs between the two.

use heck::ToUpperCamelCase;
use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::{Expr, Ident, ItemFn, Path};

use crate::args::purge::PurgeArgs;
use crate::errors::Errors;

/// What one kind of scheduled pass is: its attribute, the runtime types its job runs, its
/// fixed key and default schedule.
#[derive(Debug)]
pub struct ScheduledPass {
    /// The attribute (`purge`).
    pub attr: &'static str,
    /// The runtime module holding its types (`purge`).
    pub module: &'static str,
    /// The type its fn builds (`Purge`).
    pub builder: &'static str,
    /// The job's input (`PurgePass`).
    pub input: &'static str,
    /// The job's output (`PurgeReport`).
    pub report: &'static str,
    /// The job's fixed idempotency key: one pass at a time.
    pub key: &'static str,
    /// The task's schedule unless declared.
    pub default_cron: &'static str,
    /// Whether the builder's `run` takes the input (`run(&run, &input)`).
    pub takes_input: bool,
    /// Whether the job keeps its report (`keep_result`), for the operator to read.
    pub keeps_report: bool,
    /// What the fn builds, for messages (`one pass's targets`).
    pub builds: &'static str,
    /// A name to suggest (`app.purge`).
    pub example: &'static str,
    /// The handle's suffix suggested on a clash (`Purge`).
    pub suffix: &'static str,
}

/// A kind of scheduled pass, as a type: its declaration is a [`PassDecl`] of it.
pub trait PassKind {
    /// What it is.
    const PASS: &'static ScheduledPass;
}

/// One `#[purge]` declaration.
pub type PurgeDecl<'a> = PassDecl<'a, crate::expand::purge::PurgeKind>;
/// One `#[partitions]` declaration.
pub type PartitionsDecl<'a> = PassDecl<'a, crate::expand::partitions::PartitionsKind>;

/// One scheduled-pass declaration: the fn building what one pass runs over, and its arguments.
pub struct PassDecl<'a, K> {
    /// The targets fn, emitted unchanged.
    pub item: &'a ItemFn,
    /// The arguments as written; `None` when their shape was wrong.
    pub args: Option<&'a PurgeArgs>,
    /// `name = ..`, when declared and valid (required).
    pub name: Option<String>,
    /// `task = ..`, when declared and valid.
    pub task: Option<String>,
    /// `queue = ..`, when declared and valid.
    pub queue: Option<String>,
    /// `cron = ..` as written, when declared and valid.
    pub cron: Option<&'a Expr>,
    /// `tz = ..` as written, when declared and valid.
    pub tz: Option<&'a Expr>,
    /// `timeout = ..` as written, when declared and valid.
    pub timeout: Option<&'a Expr>,
    /// The job's handle.
    pub handle: Ident,
    /// The runtime crate.
    pub crate_path: Path,
    /// Which kind of pass.
    pub kind: std::marker::PhantomData<K>,
}

impl<'a, K: PassKind> PassDecl<'a, K> {
    /// What kind of pass it is.
    pub fn pass(&self) -> &'static ScheduledPass {
        K::PASS
    }

    /// Builds the model, recording every value that does not parse.
    pub fn from_ast(errs: &mut Errors, item: &'a ItemFn, args: Option<&'a PurgeArgs>) -> Self {
        let fn_name = item.sig.ident.unraw().to_string();
        let mut decl = PassDecl {
            item,
            args,
            name: None,
            task: None,
            queue: None,
            cron: None,
            tz: None,
            timeout: None,
            handle: Ident::new(&fn_name.to_upper_camel_case(), item.sig.ident.span()),
            crate_path: syn::parse_quote!(::jobs),
            kind: std::marker::PhantomData,
        };
        let Some(args) = args else {
            return decl;
        };
        decl.name = errs.value(&args.common.name).map(|name| name.0);
        decl.task = errs.value(&args.task).map(|task| task.0);
        decl.queue = errs.value(&args.queue).map(|queue| queue.0);
        // The schedule, zone and timeout are checked here, where the user wrote them, and
        // passed on as written to the `#[task]` and `#[job]` this expands to.
        decl.cron = errs.written(&args.cron);
        decl.tz = errs.written(&args.tz);
        decl.timeout = errs.written(&args.timeout);
        if let Some(handle) = errs.value(&args.handle) {
            decl.handle = handle.0;
        }
        if let Some(path) = errs.value(&args.common.crate_path) {
            decl.crate_path = path.0;
        }
        decl
    }

    /// The attribute itself, for errors about what it lacks.
    pub fn attr_span(&self) -> Span {
        Span::call_site()
    }
}
