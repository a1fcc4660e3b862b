//! `#[input]`: derives what a job input needs through the `jobs` crate's own serde and schemars,
//! so a crate that depends on `jobs` alone (no `serde`, no `schemars` of its own, or another
//! schemars major) can declare inputs.

use proc_macro2::TokenStream;
use quote::quote;

/// Expands `#[input]` on a struct or enum; anything else is refused with the fix named.
pub fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let runtime = runtime_path(args)?;
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
    let path: syn::Path = syn::parse_str(&runtime)?;
    let serde = format!("{runtime}::__private::serde");
    let schemars = format!("{runtime}::__private::schemars");
    Ok(quote! {
        #[derive(
            #path::__private::serde::Serialize,
            #path::__private::serde::Deserialize,
            #path::__private::schemars::JsonSchema
        )]
        #[serde(crate = #serde)]
        #[schemars(crate = #schemars)]
        #item
    })
}

/// The runtime's path: `::jobs`, or what `crate = ".."` names when the app's Cargo.toml renames
/// the dependency; no other argument is taken.
fn runtime_path(args: TokenStream) -> syn::Result<String> {
    if args.is_empty() {
        return Ok("::jobs".to_owned());
    }
    let refused = |tokens: &dyn quote::ToTokens| {
        syn::Error::new_spanned(
            tokens,
            "`#[input]` takes no arguments but `crate = \"..\"` (the runtime's path when your \
             Cargo.toml renames it): write `#[input]`, and put serde and schemars attributes \
             (`#[serde(..)]`, `#[schemars(..)]`) on the type and its fields as usual \
             (X_JOB_DECLARATION_INVALID)",
        )
    };
    let meta: syn::MetaNameValue = syn::parse2(args.clone()).map_err(|_| refused(&args))?;
    let syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Str(text),
        ..
    }) = &meta.value
    else {
        return Err(refused(&args));
    };
    if !meta.path.is_ident("crate") {
        return Err(refused(&args));
    }
    let runtime = text.value();
    syn::parse_str::<syn::Path>(&runtime).map_err(|_| {
        syn::Error::new_spanned(
            text,
            "`crate = \"..\"` names a path, such as `\"::my_jobs\"` (X_JOB_DECLARATION_INVALID)",
        )
    })?;
    Ok(runtime)
}
