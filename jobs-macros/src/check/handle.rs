//! What the handle rules share: whether the fn itself uses the handle's name.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Ident, ItemFn};

/// Where the fn's signature or body first names `handle` (a path segment, a type, a struct
/// literal), if it does: then the name is the user's own item's, and a handle of that name
/// would be defined twice.
pub fn first_use(item: &ItemFn, handle: &Ident) -> Option<Span> {
    let mut tokens = item.sig.inputs.to_token_stream();
    tokens.extend(item.sig.output.to_token_stream());
    tokens.extend(item.block.to_token_stream());
    find(tokens, handle)
}

fn find(tokens: TokenStream, handle: &Ident) -> Option<Span> {
    tokens.into_iter().find_map(|tree| match tree {
        TokenTree::Ident(ident) if ident == *handle => Some(ident.span()),
        TokenTree::Group(group) => find(group.stream(), handle),
        _ => None,
    })
}
