//! What an attribute emits when its declaration has errors: the user's item, the errors, and
//! a stand-in for the handle it would have generated.
//!
//! The item stays so that one bad argument does not turn into fifty "cannot find function"
//! errors elsewhere in the crate, and so that editors keep completing inside the fn while the
//! attribute is being fixed. The stand-in handle (built by each attribute's expander) has the
//! real one's name, methods and trait impls, with bodies that never run: call sites
//! type-check against it, so "cannot find type `SendWelcome`" never joins the declaration's
//! own errors.

use proc_macro2::TokenStream;

use super::descriptor::{job_descriptor, JobShape};

/// A refused declaration.
pub struct Refused {
    /// Every error of the declaration.
    pub errors: syn::Error,
    /// The user's item, as it is emitted again.
    pub item: TokenStream,
    /// The stand-in handle; empty when there is none to make.
    pub stand_in: TokenStream,
}

impl Refused {
    /// A refusal with no stand-in (the item is not even the right kind of item).
    pub fn bare(item: TokenStream, errors: syn::Error) -> Self {
        Refused {
            errors,
            item,
            stand_in: TokenStream::new(),
        }
    }

    /// The item, the stand-in, then every error as a `compile_error!`.
    pub fn into_tokens(self) -> TokenStream {
        let Refused {
            errors,
            item,
            stand_in,
        } = self;
        let errors = errors.into_compile_error();
        quote::quote! {
            #item
            #stand_in
            #errors
        }
    }
}

/// A stand-in handle's `impl Job`: the declared name and types, bodies that never run.
/// `p` is the `__private` path, `input_name` the input type as the manifest would show it.
pub fn stand_in_job(
    p: &TokenStream,
    handle: &syn::Ident,
    name: &str,
    input: &TokenStream,
    input_name: &str,
    output: &TokenStream,
) -> TokenStream {
    let descriptor = job_descriptor(
        p,
        JobShape::new(
            name,
            quote::quote!(#p::TenantMode::None),
            input.clone(),
            input_name,
        ),
    );
    quote::quote! {
        impl #p::Job for #handle {
            type Input = #input;
            type Output = #output;
            const DESCRIPTOR: #p::JobDescriptor = #descriptor;
            fn idempotency_key(_: &#input) -> ::std::string::String {
                ::std::unreachable!()
            }
            fn tenant(_: &#input) -> ::std::option::Option<::std::string::String> {
                ::std::unreachable!()
            }
            fn run(
                _: #p::Run,
                _: #input,
            ) -> #p::BoxFuture<'static, ::std::result::Result<Self::Output, #p::JobError>> {
                ::std::unreachable!()
            }
        }
    }
}
