//! The declaration `#[webhook]` stands for: a factory over `#[job]` delivering ONE event to ONE
//! endpoint per job.

use heck::ToUpperCamelCase;
use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::{Ident, ItemFn, Path};

use super::Retry;
use crate::args::webhook::WebhookArgs;
use crate::errors::Errors;
use crate::value::duration::DurationValue;
use crate::value::scope::Scope;

/// One `#[webhook]` declaration: the per-attempt lookup fn and its arguments.
pub struct WebhookDecl<'a> {
    /// The lookup fn, emitted unchanged.
    pub item: &'a ItemFn,
    /// The arguments as written; `None` when their shape was wrong.
    pub args: Option<&'a WebhookArgs>,
    /// `name = ..`, when declared and valid (required).
    pub name: Option<String>,
    /// `tenant = ..`, when declared and valid.
    pub tenant: Option<Scope>,
    /// `queue = ..`, when declared.
    pub queue: Option<String>,
    /// `retry(..)`.
    pub retry: Retry,
    /// `disable_after = N`, when declared.
    pub disable_after: Option<u32>,
    /// `timeout = ..`, when declared.
    pub timeout: Option<DurationValue>,
    /// `max_delay = ..`, when declared.
    pub max_delay: Option<DurationValue>,
    /// `allow_private = ..`.
    pub allow_private: bool,
    /// `development = ..`.
    pub development: bool,
    /// The handle's name.
    pub handle: Ident,
    /// The runtime crate.
    pub crate_path: Path,
}

impl<'a> WebhookDecl<'a> {
    /// Builds the model, recording every value that does not parse.
    pub fn from_ast(errs: &mut Errors, item: &'a ItemFn, args: Option<&'a WebhookArgs>) -> Self {
        let fn_name = item.sig.ident.unraw().to_string();
        let mut decl = WebhookDecl {
            item,
            args,
            name: None,
            tenant: None,
            queue: None,
            retry: Retry::default(),
            disable_after: None,
            timeout: None,
            max_delay: None,
            allow_private: false,
            development: false,
            handle: Ident::new(&fn_name.to_upper_camel_case(), item.sig.ident.span()),
            crate_path: syn::parse_quote!(::jobs),
        };
        let Some(args) = args else {
            return decl;
        };
        let delivery = &args.delivery;
        decl.name = errs.value(&delivery.common.name).map(|name| name.0);
        decl.tenant = errs.value(&args.tenant);
        decl.queue = errs.value(&delivery.queue).map(|queue| queue.0);
        if let Some(retry) = &delivery.retry {
            decl.retry = Retry::from_args(retry, errs);
        }
        decl.disable_after = errs.value(&args.disable_after).map(|count| count.0);
        decl.timeout = errs.value(&args.timeout);
        decl.max_delay = errs.value(&args.max_delay);
        decl.allow_private = errs.value(&args.allow_private).is_some_and(|f| f.0);
        decl.development = errs.value(&args.development).is_some_and(|f| f.0);
        if let Some(handle) = errs.value(&args.handle) {
            decl.handle = handle.0;
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
