//! The declaration `#[purge]` stands for: a purge job (one pass over the targets its fn builds)
//! and the cron task that fires it, by default at minute 23 of every hour.

use heck::ToUpperCamelCase;
use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::{Expr, Ident, ItemFn, Path};

use crate::args::purge::PurgeArgs;
use crate::errors::Errors;

/// One `#[purge]` declaration: the fn building the pass's targets, and its arguments.
pub struct PurgeDecl<'a> {
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
}

impl<'a> PurgeDecl<'a> {
    /// Builds the model, recording every value that does not parse.
    pub fn from_ast(errs: &mut Errors, item: &'a ItemFn, args: Option<&'a PurgeArgs>) -> Self {
        let fn_name = item.sig.ident.unraw().to_string();
        let mut decl = PurgeDecl {
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
        };
        let Some(args) = args else {
            return decl;
        };
        decl.name = errs.value(&args.common.name).map(|name| name.0);
        decl.task = errs.value(&args.task).map(|task| task.0);
        decl.queue = errs.value(&args.queue).map(|queue| queue.0);
        // The schedule, zone and timeout are checked here, where the user wrote them, and
        // passed on as written to the `#[task]` and `#[job]` this expands to.
        if let Some(cron) = &args.cron {
            decl.cron = errs.arg(cron).map(|_| cron.tokens());
        }
        if let Some(tz) = &args.tz {
            decl.tz = errs.arg(tz).map(|_| tz.tokens());
        }
        if let Some(timeout) = &args.timeout {
            decl.timeout = errs.arg(timeout).map(|_| timeout.tokens());
        }
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
