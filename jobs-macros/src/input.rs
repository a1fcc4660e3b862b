//! `#[input]`: derives what a job input needs through the `jobs` crate's own serde and schemars,
//! so a crate that depends on `jobs` alone (no `serde`, no `schemars` of its own, or another
//! schemars major) can declare inputs.

use proc_macro2::TokenStream;
use quote::quote;

/// Expands `#[input]` on a struct or enum; anything else is refused with the fix named.
pub fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !args.is_empty() {
        return Err(syn::Error::new_spanned(
            args,
            "X_JOB_DECLARATION_INVALID: `#[input]` takes no arguments\n\
             fix: write `#[input]`; serde and schemars attributes (`#[serde(..)]`, \
             `#[schemars(..)]`) go on the type and its fields as usual",
        ));
    }
    let item: syn::Item = syn::parse2(item)?;
    if !matches!(item, syn::Item::Struct(_) | syn::Item::Enum(_)) {
        return Err(syn::Error::new_spanned(
            &item,
            "X_JOB_DECLARATION_INVALID: `#[input]` goes on the struct or enum a job takes\n\
             fix: put `#[input]` on the input type's declaration",
        ));
    }
    // The derives come first: their helper attributes (`serde`, `schemars`) are only known
    // after them. `crate = ..` points the generated code at the copies `jobs` re-exports.
    Ok(quote! {
        #[derive(
            ::jobs::__private::serde::Serialize,
            ::jobs::__private::serde::Deserialize,
            ::jobs::__private::schemars::JsonSchema
        )]
        #[serde(crate = "::jobs::__private::serde")]
        #[schemars(crate = "::jobs::__private::schemars")]
        #item
    })
}
