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
