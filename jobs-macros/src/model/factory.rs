//! The declarations `#[backfill]` and `#[ledger]` stand for: the factories over `#[job]`.

use heck::ToUpperCamelCase;
use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::{FnArg, GenericArgument, Ident, ItemFn, ItemStruct, Path, PathArguments, Type};

use super::Retry;
use crate::args::backfill::{BackfillArgs, LedgerArgs};
use crate::errors::Errors;
use crate::value::book::Book;
use crate::value::duration::DurationValue;
use crate::value::scope::Scope;

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
    /// `requires = ".."`, when declared and valid.
    pub requires: Option<String>,
    /// `environments = [..]`, when declared and valid.
    pub environments: Vec<String>,
    /// `count = path`, when declared and valid.
    pub count: Option<Path>,
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
            requires: None,
            environments: Vec::new(),
            count: None,
        };
        let Some(args) = args else {
            return decl;
        };
        let delivery = &args.delivery;
        decl.name = errs.value(&delivery.common.name).map(|name| name.0);
        decl.tenant = errs.value(&args.tenant);
        decl.source = errs.value(&args.source).map(|path| path.0);
        decl.requires = errs.value(&args.requires).map(|id| id.0);
        decl.environments = errs
            .value(&args.environments)
            .map(|envs| envs.0)
            .unwrap_or_default();
        decl.count = errs.value(&args.count).map(|path| path.0);
        decl.batch = errs.value(&args.batch).map(|count| count.0);
        decl.rate = errs.value(&args.rate).map(|rate| rate.0);
        decl.queue = errs.value(&delivery.queue).map(|queue| queue.0);
        if let Some(retry) = &delivery.retry {
            decl.retry = Retry::from_args(retry, errs);
        }
        decl.timeout = errs.value(&args.timeout);
        if let Some(handle) = errs.value(&args.handle) {
            decl.handle = handle.0;
        }
        if let Some(path) = errs.value(&delivery.common.crate_path) {
            decl.crate_path = path.0;
        }
        decl
    }

    /// The row type: `R` in the second parameter's `Vec<R>`.
    pub fn row_ty(&self) -> Option<&'a Type> {
        let rows = *PagedDecl::params(self).get(1)?;
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
        let delivery = &args.delivery;
        decl.name = errs.value(&delivery.common.name).map(|name| name.0);
        decl.tenant = errs.value(&args.tenant);
        decl.book = errs.value(&args.book);
        decl.queue = errs.value(&delivery.queue).map(|queue| queue.0);
        if let Some(retry) = &delivery.retry {
            decl.retry = Retry::from_args(retry, errs);
        }
        if let Some(path) = errs.value(&delivery.common.crate_path) {
            decl.crate_path = path.0;
        }
        decl
    }

    /// The attribute itself, for errors about what it lacks.
    pub fn attr_span(&self) -> Span {
        Span::call_site()
    }
}

/// A declaration over a keyset source and a per-page handler (`#[backfill]`, `#[consumer]`):
/// what the handler rules (`crate::check::factory`) read of it.
pub trait PagedDecl<'a> {
    /// The attribute's name (`backfill`).
    fn attr(&self) -> &'static str;
    /// The durable step a page runs in, as messages name it (`batch:N`).
    fn step(&self) -> &'static str;
    /// The handler.
    fn item(&self) -> &'a ItemFn;
    /// Whether `source = ..` is missing from well-formed arguments.
    fn source_missing(&self) -> bool;

    /// The handler's typed parameters, in order.
    fn params(&self) -> Vec<&'a syn::PatType> {
        self.item()
            .sig
            .inputs
            .iter()
            .filter_map(|arg| match arg {
                FnArg::Typed(pat) => Some(pat),
                FnArg::Receiver(_) => None,
            })
            .collect()
    }
}

impl<'a> PagedDecl<'a> for BackfillDecl<'a> {
    fn attr(&self) -> &'static str {
        "backfill"
    }
    fn step(&self) -> &'static str {
        "batch:N"
    }
    fn item(&self) -> &'a ItemFn {
        self.item
    }
    fn source_missing(&self) -> bool {
        self.args.is_some_and(|args| args.source.is_none())
    }
}
