//! The one expansion every attribute goes through: read the item, let darling read the
//! arguments, build the declaration, check every rule, then emit the declaration, or, when it
//! is refused, the item again, a stand-in handle and every error (see `super::fallback`).
//!
//! Each attribute supplies only what is its own, through [`Macro`]; [`impl_macro!`] writes that
//! impl from the attribute's parts, so the wiring every attribute shares is written once.

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
    type Args: darling::FromMeta + args::common::ArgNames;
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

/// Writes `impl Macro for $attr` from the attribute's own parts: its name and wrong-item
/// refusal, its item, argument and declaration types, and the functions that refuse an
/// argument, check, emit and stand in. `rename` lists the declaration's fields a refused
/// declaration takes back from arguments that did not all parse (`handle`, `crate_path`: an
/// attribute whose handle is the user's own struct lists only `crate_path`). Methods of the
/// attribute's own (`refused_item`) follow the parts.
macro_rules! impl_macro {
    (
        impl Macro for $attr:ident {
            name: $name:literal,
            wrong_item: $wrong_item:expr,
            item: $item:ty,
            args: $args:ty,
            decl: $decl:ident,
            refused: $refused:path,
            check: $check:path,
            emit: $emit:path,
            stand_in: $stand_in:path,
            rename: [$($field:ident),+ $(,)?],
            $($own:tt)*
        }
    ) => {
        impl $crate::expand::pipeline::Macro for $attr {
            const NAME: &'static str = $name;
            const WRONG_ITEM: &'static str = $wrong_item;
            type Item = $item;
            type Args = $args;
            type Decl<'a> = $decl<'a>;

            fn refused(arg: &str) -> Option<String> {
                $refused(arg)
            }

            fn decl<'a>(
                errs: &mut $crate::errors::Errors,
                item: &'a $item,
                args: Option<&'a $args>,
            ) -> $decl<'a> {
                $decl::from_ast(errs, item, args)
            }

            fn check(errs: &mut $crate::errors::Errors, decl: &$decl<'_>) {
                $check(errs, decl);
            }

            fn emit(decl: &$decl<'_>) -> ::proc_macro2::TokenStream {
                $emit(decl)
            }

            fn rename(
                decl: &mut $decl<'_>,
                handle: Option<::syn::Ident>,
                krate: Option<::syn::Path>,
            ) {
                // A tuple, so an attribute that takes back only the crate path leaves the
                // handle unread without an unused parameter.
                let recovered = (handle, krate);
                $($crate::expand::pipeline::impl_macro!(@take decl.$field, recovered);)+
            }

            fn stand_in(decl: &$decl<'_>) -> ::proc_macro2::TokenStream {
                $stand_in(decl)
            }

            $($own)*
        }
    };
    (@take $decl:ident.handle, $recovered:ident) => {
        $decl.handle = $recovered.0.unwrap_or_else(|| $decl.handle.clone());
    };
    (@take $decl:ident.crate_path, $recovered:ident) => {
        $decl.crate_path = $recovered.1.unwrap_or_else(|| $decl.crate_path.clone());
    };
}
pub(crate) use impl_macro;
