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
            "`#[input]` takes no arguments: write `#[input]`, and put serde and schemars \
             attributes (`#[serde(..)]`, `#[schemars(..)]`) on the type and its fields as usual \
             (X_JOB_DECLARATION_INVALID)",
        ));
    }
    let item: syn::Item = syn::parse2(item)?;
    if !matches!(item, syn::Item::Struct(_) | syn::Item::Enum(_)) {
        return Err(syn::Error::new_spanned(
            &item,
            "`#[input]` goes on the struct or enum a job takes as its input: put it on that \
             type's declaration (X_JOB_DECLARATION_INVALID)",
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
