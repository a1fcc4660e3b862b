//! The declarations `#[backfill]` and `#[ledger]` stand for: the factories over `#[job]`.

use heck::ToUpperCamelCase;
use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::{FnArg, GenericArgument, Ident, ItemFn, ItemStruct, Path, PathArguments, Type};

use super::Retry;
use crate::args::backfill::{BackfillArgs, LedgerArgs};
use crate::errors::Errors;
use crate::value::book::Book;
use crate::value::count;
use crate::value::duration::{self, DurationValue};
use crate::value::rate;
use crate::value::scope::Scope;
use crate::value::text;

/// One `#[backfill]` declaration: the per-page handler fn and its arguments.
pub struct BackfillDecl<'a> {
    /// The handler, emitted unchanged.
    pub item: &'a ItemFn,
    /// The arguments as written; `None` when their shape was wrong.
    pub args: Option<&'a BackfillArgs>,
    /// `name = ..`, when declared and valid (required: the durable key).
    pub name: Option<String>,
    /// `tenant = ..`, when declared and valid.
    pub tenant: Option<Scope>,
    /// `source = path`, when declared and valid.
    pub source: Option<Path>,
    /// `batch = N`, when declared.
    pub batch: Option<u32>,
    /// `rate = R`, when declared.
    pub rate: Option<f64>,
    /// `queue = ..`, when declared.
    pub queue: Option<String>,
    /// `retry(..)`.
    pub retry: Retry,
    /// `timeout = ..`, when declared.
    pub timeout: Option<DurationValue>,
    /// The handle's name.
    pub handle: Ident,
    /// The runtime crate.
    pub crate_path: Path,
}

impl<'a> BackfillDecl<'a> {
    /// Builds the model, recording every value that does not parse.
    pub fn from_ast(errs: &mut Errors, item: &'a ItemFn, args: Option<&'a BackfillArgs>) -> Self {
        let fn_name = item.sig.ident.unraw().to_string();
        let mut decl = BackfillDecl {
            item,
            args,
            name: None,
            tenant: None,
            source: None,
            batch: None,
            rate: None,
            queue: None,
            retry: Retry::default(),
            timeout: None,
            handle: Ident::new(&fn_name.to_upper_camel_case(), item.sig.ident.span()),
            crate_path: syn::parse_quote!(::jobs),
        };
        let Some(args) = args else {
            return decl;
        };
        if let Some(raw) = &args.name {
            decl.name = errs
                .handle(text::non_blank(&raw.0, "name"))
                .map(|lit| lit.value());
        }
        if let Some(raw) = &args.tenant {
            decl.tenant = errs.handle(Scope::parse(&raw.0, "backfill", "each pass"));
        }
        if let Some(raw) = &args.source {
            decl.source = errs.handle(text::fn_path(&raw.0, "source"));
        }
        if let Some(raw) = &args.batch {
            decl.batch = errs.handle(count::positive(
                &raw.0,
                "batch",
                "a page of 0 rows would never move the cursor; leave `batch` out for 1,000 rows \
                 per page",
            ));
        }
        if let Some(raw) = &args.rate {
            decl.rate = errs.handle(rate::parse(&raw.0));
        }
        if let Some(raw) = &args.queue {
            decl.queue = errs
                .handle(text::non_blank(&raw.0, "queue"))
                .map(|lit| lit.value());
        }
        if let Some(retry) = &args.retry {
            decl.retry = Retry::from_args(retry, errs);
        }
        if let Some(raw) = &args.timeout {
            decl.timeout = errs.handle(duration::parse(
                &raw.0,
                "timeout",
                "leave `timeout` out for no ceiling on a pass",
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

    /// The typed parameters, in order.
    pub fn params(&self) -> impl Iterator<Item = &'a syn::PatType> {
        self.item.sig.inputs.iter().filter_map(|arg| match arg {
            FnArg::Typed(pat) => Some(pat),
            FnArg::Receiver(_) => None,
        })
    }

    /// The row type: `R` in the second parameter's `Vec<R>`.
    pub fn row_ty(&self) -> Option<&'a Type> {
        let rows = self.params().nth(1)?;
        vec_item(&rows.ty)
    }

    /// The attribute itself, for errors about what it lacks.
    pub fn attr_span(&self) -> Span {
        Span::call_site()
    }
}

/// `T` in `Vec<T>` (any path ending in `Vec`).
pub fn vec_item(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "Vec" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first() {
        Some(GenericArgument::Type(item)) if args.args.len() == 1 => Some(item),
        _ => None,
    }
}

/// One `#[ledger]` declaration: the handle struct and its arguments.
pub struct LedgerDecl<'a> {
    /// The handle, emitted unchanged.
    pub item: &'a ItemStruct,
    /// The arguments as written; `None` when their shape was wrong.
    pub args: Option<&'a LedgerArgs>,
    /// `name = ..`, when declared and valid.
    pub name: Option<String>,
    /// `tenant = ..`, when declared and valid.
    pub tenant: Option<Scope>,
    /// `book = ..`, when declared and valid.
    pub book: Option<Book>,
    /// `queue = ..`, when declared.
    pub queue: Option<String>,
    /// `retry(..)`.
    pub retry: Retry,
    /// The runtime crate.
    pub crate_path: Path,
}

impl<'a> LedgerDecl<'a> {
    /// Builds the model, recording every value that does not parse.
    pub fn from_ast(errs: &mut Errors, item: &'a ItemStruct, args: Option<&'a LedgerArgs>) -> Self {
        let mut decl = LedgerDecl {
            item,
            args,
            name: None,
            tenant: None,
            book: None,
            queue: None,
            retry: Retry::default(),
            crate_path: syn::parse_quote!(::jobs),
        };
        let Some(args) = args else {
            return decl;
        };
        if let Some(raw) = &args.name {
            decl.name = errs
                .handle(text::non_blank(&raw.0, "name"))
                .map(|lit| lit.value());
        }
        if let Some(raw) = &args.tenant {
            decl.tenant = errs.handle(Scope::parse(&raw.0, "ledger", "each posting"));
        }
        if let Some(raw) = &args.book {
            decl.book = errs.handle(Book::parse(&raw.0));
        }
        if let Some(raw) = &args.queue {
            decl.queue = errs
                .handle(text::non_blank(&raw.0, "queue"))
                .map(|lit| lit.value());
        }
        if let Some(retry) = &args.retry {
            decl.retry = Retry::from_args(retry, errs);
        }
        if let Some(raw) = &args.crate_path {
            if let Some(path) = errs.handle(text::crate_path(&raw.0)) {
                decl.crate_path = path;
            }
        }
        decl
    }

    /// The attribute itself, for errors about what it lacks.
    pub fn attr_span(&self) -> Span {
        Span::call_site()
    }
}
