//! What an attribute emits when its declaration has errors: the user's item, unchanged, and
//! the errors.
//!
//! The item stays so that one bad argument does not turn into fifty "cannot find function"
//! errors elsewhere in the crate, and so that editors keep completing inside the fn while the
//! attribute is being fixed. Nothing else is generated: a half-built handle would only add
//! secondary errors.

use proc_macro2::TokenStream;

/// The item as written, followed by every error as a `compile_error!`.
pub fn with_errors(item: TokenStream, errors: syn::Error) -> TokenStream {
    let errors = errors.into_compile_error();
    quote::quote! {
        #item
        #errors
    }
}

/// The placeholder expansion of an attribute that is not built yet: the item, unchanged, and
/// one error saying so.
pub fn not_yet(attr: &str, item: TokenStream) -> TokenStream {
    let error = syn::Error::new(
        proc_macro2::Span::call_site(),
        format!("`#[{attr}]` is not implemented yet (see issue 4)"),
    );
    with_errors(item, error)
}
