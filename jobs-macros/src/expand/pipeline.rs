//! The one expansion every attribute goes through: read the item, let darling read the
//! arguments, build the declaration, check every rule, then emit the declaration, or, when it
//! is refused, the item again, a stand-in handle and every error (see `super::fallback`).
//!
//! Each attribute supplies only what is its own, through [`Macro`].

use proc_macro2::{Span, TokenStream};
use syn::{Ident, Path};

use super::fallback::Refused;
use crate::args::{self, recover_names};
use crate::errors::Errors;

/// What one attribute macro brings to the pipeline.
pub trait Macro {
    /// The attribute's name, as in `#[job]`.
    const NAME: &'static str;
    /// The refusal of an item the attribute cannot go on: what it goes on, with the code.
    const WRONG_ITEM: &'static str;
    /// What the attribute goes on (`syn::ItemFn`, `syn::ItemStruct`).
    type Item: syn::parse::Parse;
    /// The arguments, as darling reads them.
    type Args: darling::FromMeta;
    /// The declaration: the item and its arguments, with the defaults applied.
    type Decl<'a>;

    /// Why the attribute refuses the argument `arg`, if it does: an argument people reach for
    /// that belongs elsewhere. It is reported at the argument and the rest are still read.
    fn refused(_arg: &str) -> Option<String> {
        None
    }

    /// Builds the declaration, recording every value that did not read. `args` is `None` when
    /// their shape was wrong, so which ones were given is not known.
    fn decl<'a>(
        errs: &mut Errors,
        item: &'a Self::Item,
        args: Option<&'a Self::Args>,
    ) -> Self::Decl<'a>;

    /// Every rule of the attribute.
    fn check(errs: &mut Errors, decl: &Self::Decl<'_>);

    /// The expansion of a declaration that passed every rule.
    fn emit(decl: &Self::Decl<'_>) -> TokenStream;

    /// Takes the handle's name and the runtime crate's path recovered from arguments that did
    /// not all parse, so the stand-in is named as the user wrote.
    fn rename(decl: &mut Self::Decl<'_>, handle: Option<Ident>, krate: Option<Path>);

    /// What a refused declaration leaves for its call sites (see `super::fallback`).
    fn stand_in(decl: &Self::Decl<'_>) -> TokenStream;

    /// The item as a refused declaration emits it again: as written, unless the attribute
    /// knows that would add rustc's errors to its own.
    fn refused_item(_decl: &Self::Decl<'_>, item: TokenStream) -> TokenStream {
        item
    }
}

/// Expands `#[M(args)] item`: parse, model, check, then emit, or the refusal.
pub fn run<M: Macro>(args: TokenStream, item: TokenStream) -> Result<TokenStream, Refused> {
    let parsed: M::Item = match syn::parse2(item.clone()) {
        Ok(parsed) => parsed,
        Err(_) => {
            return Err(Refused::bare(
                item,
                syn::Error::new(Span::call_site(), M::WRONG_ITEM),
            ))
        }
    };
    let mut errs = Errors::new();
    let parsed_args = args::common::parse::<M::Args>(args.clone(), M::NAME, M::refused, &mut errs);
    let mut decl = M::decl(&mut errs, &parsed, parsed_args.as_ref());
    M::check(&mut errs, &decl);
    match errs.finish() {
        Ok(()) => Ok(M::emit(&decl)),
        Err(errors) => {
            if parsed_args.is_none() {
                let (handle, krate) = recover_names(args);
                M::rename(&mut decl, handle, krate);
            }
            Err(Refused {
                errors,
                stand_in: M::stand_in(&decl),
                item: M::refused_item(&decl, item),
            })
        }
    }
}
