//! The prelude's `Serialize`, `Deserialize` and `JsonSchema` derives: serde's and schemars'
//! own derives, reached through the copies `jobs` re-exports, so they work in a crate that
//! depends on `jobs` alone (no `serde` or `schemars` of its own, or another schemars major).
//!
//! A derive cannot add `#[serde(crate = ..)]` to the item it is on, so each one derives on a
//! private mirror of the item instead, with serde's remote derive (`#[serde(remote = ..)]`):
//! the mirror has the item's fields, variants and their serde and schemars attributes, and its
//! derived functions read and build the item itself. The item's impl calls them. Everything is
//! inside a `const _: () = { .. };`, so no name leaks into the user's module.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Attribute, Data, DeriveInput, Fields};

/// Which derive.
#[derive(Clone, Copy)]
pub enum Derive {
    Serialize,
    Deserialize,
    JsonSchema,
}

/// Expands one of the prelude's derives on `input`.
pub fn expand(derive: Derive, input: TokenStream) -> syn::Result<TokenStream> {
    let input: DeriveInput = syn::parse2(input)?;
    if let Data::Union(_) = input.data {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "the prelude's `Serialize`, `Deserialize` and `JsonSchema` go on a struct or an \
             enum, as serde's do: declare the job input as one, with `#[input]` on it \
             (X_JOB_DECLARATION_INVALID)",
        ));
    }
    let mirror_ident = format_ident!(
        "__Jobs{}Mirror",
        match derive {
            Derive::Serialize => "Serialize",
            Derive::Deserialize => "Deserialize",
            Derive::JsonSchema => "JsonSchema",
        }
    );
    let mirror = mirror(&input, &mirror_ident, derive);
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let type_params: Vec<_> = input.generics.type_params().map(|p| &p.ident).collect();
    // The mirror has the item's generics: as a type, and as a path in an expression.
    let mirror_generics = &ty_generics;
    let mirror_call = ty_generics.as_turbofish();
    let predicates = where_clause.map(|w| &w.predicates);
    let serde = quote!(::jobs::__private::serde);
    let schemars = quote!(::jobs::__private::schemars);
    let body = match derive {
        Derive::Serialize => quote! {
            #[automatically_derived]
            impl #impl_generics #serde::Serialize for #name #ty_generics
            where #( #type_params: #serde::Serialize, )* #predicates
            {
                fn serialize<__S>(&self, serializer: __S)
                    -> ::std::result::Result<__S::Ok, __S::Error>
                where __S: #serde::Serializer,
                {
                    #mirror_ident #mirror_call::serialize(self, serializer)
                }
            }
        },
        Derive::Deserialize => {
            let lifetime = quote!('__de);
            let mut generics = input.generics.clone();
            generics.params.insert(0, syn::parse_quote!('__de));
            let (de_impl_generics, _, _) = generics.split_for_impl();
            quote! {
                #[automatically_derived]
                impl #de_impl_generics #serde::Deserialize<#lifetime> for #name #ty_generics
                where #( #type_params: #serde::Deserialize<#lifetime>, )* #predicates
                {
                    fn deserialize<__D>(deserializer: __D)
                        -> ::std::result::Result<Self, __D::Error>
                    where __D: #serde::Deserializer<#lifetime>,
                    {
                        #mirror_ident #mirror_call::deserialize(deserializer)
                    }
                }
            }
        }
        Derive::JsonSchema => quote! {
            #[automatically_derived]
            impl #impl_generics #schemars::JsonSchema for #name #ty_generics
            where #( #type_params: #schemars::JsonSchema, )* #predicates
            {
                fn inline_schema() -> bool {
                    <#mirror_ident #mirror_generics as #schemars::JsonSchema>::inline_schema()
                }
                fn schema_name() -> ::std::borrow::Cow<'static, str> {
                    <#mirror_ident #mirror_generics as #schemars::JsonSchema>::schema_name()
                }
                fn schema_id() -> ::std::borrow::Cow<'static, str> {
                    <#mirror_ident #mirror_generics as #schemars::JsonSchema>::schema_id()
                }
                fn json_schema(generator: &mut #schemars::SchemaGenerator) -> #schemars::Schema {
                    <#mirror_ident #mirror_generics as #schemars::JsonSchema>::json_schema(generator)
                }
            }
        },
    };
    Ok(quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unused_attributes, unused_qualifications, dead_code)]
        const _: () = {
            #mirror
            #body
        };
    })
}

/// The private mirror of `input` the real derive goes on: its generics, fields and variants,
/// with only their serde, schemars and doc attributes.
fn mirror(input: &DeriveInput, ident: &syn::Ident, derive: Derive) -> TokenStream {
    let name = &input.ident;
    let name_text = name.to_string();
    let generics = &input.generics;
    let where_clause = &generics.where_clause;
    let schema = matches!(derive, Derive::JsonSchema);
    let attrs = kept(&input.attrs, schema);
    let serde = quote!(::jobs::__private::serde);
    let schemars = quote!(::jobs::__private::schemars);
    let (derive_path, crate_attrs) = match derive {
        Derive::Serialize => (
            quote!(#serde::Serialize),
            quote!(#[serde(crate = "::jobs::__private::serde", remote = #name_text)]),
        ),
        Derive::Deserialize => (
            quote!(#serde::Deserialize),
            quote!(#[serde(crate = "::jobs::__private::serde", remote = #name_text)]),
        ),
        Derive::JsonSchema => {
            // schemars names a mirror with `#[serde(remote = "Item")]` after the item, as it
            // would name the item (its schema id, `module::Item`, included), unless a container
            // `#[serde(rename = ..)]` names it otherwise, which the remote would override.
            let renamed = input.attrs.iter().any(|a| {
                a.path().is_ident("serde") && a.meta.to_token_stream_string().contains("rename =")
            });
            let remote = if renamed {
                quote!()
            } else {
                quote!(#[serde(remote = #name_text)])
            };
            (
                quote!(#schemars::JsonSchema),
                quote!(
                    #[schemars(crate = "::jobs::__private::schemars")]
                    #remote
                ),
            )
        }
    };
    let body = match &input.data {
        Data::Struct(data) => {
            let fields = fields(&data.fields, schema);
            match &data.fields {
                Fields::Named(_) => quote!(struct #ident #generics #where_clause #fields),
                Fields::Unnamed(_) => quote!(struct #ident #generics #fields #where_clause;),
                Fields::Unit => quote!(struct #ident #generics #where_clause;),
            }
        }
        Data::Enum(data) => {
            let variants = data.variants.iter().map(|v| {
                let attrs = kept(&v.attrs, schema);
                let ident = &v.ident;
                let fields = fields(&v.fields, schema);
                let discriminant = v.discriminant.as_ref().map(|(eq, e)| quote!(#eq #e));
                quote!(#(#attrs)* #ident #fields #discriminant)
            });
            quote!(enum #ident #generics #where_clause { #(#variants,)* })
        }
        Data::Union(_) => unreachable!("refused above"),
    };
    quote! {
        #[derive(#derive_path)]
        #crate_attrs
        #(#attrs)*
        #body
    }
}

/// The fields, each with only its serde, schemars and doc attributes (no visibility: the
/// mirror is private to its block).
fn fields(fields: &Fields, schema: bool) -> TokenStream {
    match fields {
        Fields::Named(named) => {
            let each = named.named.iter().map(|f| {
                let attrs = kept(&f.attrs, schema);
                let ident = &f.ident;
                let ty = &f.ty;
                quote!(#(#attrs)* #ident: #ty)
            });
            quote!({ #(#each,)* })
        }
        Fields::Unnamed(unnamed) => {
            let each = unnamed.unnamed.iter().map(|f| {
                let attrs = kept(&f.attrs, schema);
                let ty = &f.ty;
                quote!(#(#attrs)* #ty)
            });
            quote!(( #(#each,)* ))
        }
        Fields::Unit => quote!(),
    }
}

/// The attributes a mirror keeps: serde's and the docs; a schema's mirror also schemars' and
/// the validation attributes schemars reads (`validate`, `garde`). serde's derive would refuse
/// the attributes it does not own.
fn kept(attrs: &[Attribute], schema: bool) -> Vec<&Attribute> {
    attrs
        .iter()
        .filter(|a| {
            let path = a.path();
            path.is_ident("serde")
                || path.is_ident("doc")
                || (schema
                    && (path.is_ident("schemars")
                        || path.is_ident("validate")
                        || path.is_ident("garde")))
        })
        .collect()
}

trait MetaText {
    fn to_token_stream_string(&self) -> String;
}

impl MetaText for syn::Meta {
    fn to_token_stream_string(&self) -> String {
        quote::ToTokens::to_token_stream(self).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every path to serde or schemars in an expansion goes through `jobs`' copies, and the
    /// mirror's derive is told so (`crate = ..`): nothing needs the user's own serde or
    /// schemars. (The ui case `job/pass/prelude_derives.rs` runs them.)
    #[test]
    fn expansions_name_serde_and_schemars_only_through_jobs() {
        let item: TokenStream = syn::parse_str(
            "#[serde(rename_all = \"camelCase\")] pub struct Page<T> { pub items: Vec<T> }",
        )
        .unwrap();
        for (derive, crate_attr) in [
            (Derive::Serialize, "crate = \"::jobs::__private::serde\""),
            (Derive::Deserialize, "crate = \"::jobs::__private::serde\""),
            (
                Derive::JsonSchema,
                "crate = \"::jobs::__private::schemars\"",
            ),
        ] {
            let text = expand(derive, item.clone()).unwrap().to_string();
            assert!(text.contains(crate_attr), "{text}");
            assert!(text.contains("remote = \"Page\""), "{text}");
            let paths = text.matches("serde ::").count() + text.matches("schemars ::").count();
            let ours = text.matches("__private :: serde ::").count()
                + text.matches("__private :: schemars ::").count();
            assert_eq!(paths, ours, "{text}");
        }
    }

    #[test]
    fn a_union_is_refused_toward_input() {
        let item: TokenStream = syn::parse_str("union U { a: u32 }").unwrap();
        let err = expand(Derive::Serialize, item).unwrap_err().to_string();
        assert!(err.contains("`#[input]`"), "{err}");
    }
}
