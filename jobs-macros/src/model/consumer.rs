//! The declaration `#[consumer]` stands for: a job reading a keyset source in laps, and the
//! task supervising it.

use heck::ToUpperCamelCase;
use syn::ext::IdentExt;
use syn::{Expr, Ident, ItemFn, Path};

use super::PagedDecl;
use crate::args::consumer::ConsumerArgs;
use crate::errors::Errors;

/// One `#[consumer]` declaration: the per-page handler and its arguments.
pub struct ConsumerDecl<'a> {
    /// The handler, emitted unchanged.
    pub item: &'a ItemFn,
    /// The arguments as written; `None` when their shape was wrong.
    pub args: Option<&'a ConsumerArgs>,
    /// `name = ..`, when declared and valid (required).
    pub name: Option<String>,
    /// `source = path`, when declared and valid (required).
    pub source: Option<Path>,
    /// `batch = N`, when declared.
    pub batch: Option<u32>,
    /// `lap = N`, when declared.
    pub lap: Option<u32>,
    /// `poll = ..` in milliseconds, when declared.
    pub poll_millis: Option<u64>,
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

impl<'a> ConsumerDecl<'a> {
    /// Builds the model, recording every value that does not parse.
    pub fn from_ast(errs: &mut Errors, item: &'a ItemFn, args: Option<&'a ConsumerArgs>) -> Self {
        let fn_name = item.sig.ident.unraw().to_string();
        let mut decl = ConsumerDecl {
            item,
            args,
            name: None,
            source: None,
            batch: None,
            lap: None,
            poll_millis: None,
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
        decl.source = errs.value(&args.source).map(|path| path.0);
        decl.batch = errs.value(&args.batch).map(|count| count.0);
        decl.lap = errs.value(&args.lap).map(|count| count.0);
        decl.poll_millis = errs.value(&args.poll).map(|poll| poll.millis);
        decl.queue = errs.value(&args.queue).map(|queue| queue.0);
        // Checked here, where the user wrote them, and passed on as written to the `#[task]`
        // and `#[job]` this expands to.
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
}

impl<'a> PagedDecl<'a> for ConsumerDecl<'a> {
    fn attr(&self) -> &'static str {
        "consumer"
    }
    fn step(&self) -> &'static str {
        "page:N"
    }
    fn item(&self) -> &'a ItemFn {
        self.item
    }
    fn source_missing(&self) -> bool {
        self.args.is_some_and(|args| args.source.is_none())
    }
}
