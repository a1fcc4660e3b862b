//! What the handle rules share: whether the fn itself uses the handle's name for a type of the
//! user's.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{Ident, ItemFn};

/// Whom a handle refusal points at (`handle = ..` when it was declared, else the fn name the
/// handle comes from) and how it says where the handle's name came from.
pub fn blame<'a>(
    attribute: &str,
    handle: &'a Ident,
    item: &'a ItemFn,
    declared: bool,
) -> (&'a Ident, String) {
    if declared {
        (handle, format!("the handle `{handle}`"))
    } else {
        let origin = format!(
            "`#[{attribute}]` names the handle after the fn (`{}` -> `{handle}`), and `{handle}`",
            item.sig.ident.unraw()
        );
        (&item.sig.ident, origin)
    }
}

/// Where the fn's body first builds or destructures a value of a type named like the handle
/// (`Digest { .. }`, `Digest(..)`), if it does: the handle is a unit struct, which neither
/// has, so that name is a type of the user's, declared beside the fn, and a handle of the same
/// name would be defined twice. The handle's own paths (`Digest::enqueue(..)`, a job that
/// enqueues itself) are not counted.
pub fn first_use(item: &ItemFn, handle: &Ident) -> Option<Span> {
    find(item.block.to_token_stream(), handle)
}

fn find(tokens: TokenStream, handle: &Ident) -> Option<Span> {
    let mut trees = tokens.into_iter().peekable();
    while let Some(tree) = trees.next() {
        match tree {
            TokenTree::Ident(ident) if ident == *handle => {
                let built = matches!(
                    trees.peek(),
                    Some(TokenTree::Group(g))
                        if matches!(g.delimiter(), Delimiter::Brace | Delimiter::Parenthesis)
                );
                if built {
                    return Some(ident.span());
                }
            }
            TokenTree::Group(group) => {
                if let Some(span) = find(group.stream(), handle) {
                    return Some(span);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used(body: &str) -> bool {
        let item: ItemFn = syn::parse_str(&format!("fn digest() {{ {body} }}")).unwrap();
        first_use(&item, &syn::parse_str("Digest").unwrap()).is_some()
    }

    #[test]
    fn a_value_built_or_destructured_is_a_use_and_the_handles_own_paths_are_not() {
        assert!(used("let d = Digest { day: 1 };"));
        assert!(used("vec![Entry::of::<SendDigest>(Digest { day })]"));
        assert!(used("let Digest { day } = d;"));
        assert!(used("let d = Digest(1);"));
        assert!(!used("Digest::enqueue(&jobs, input).await;"));
        assert!(!used("let _ = Digest::descriptor();"));
        assert!(!used("let x = DigestInput { day: 1 };"));
    }
}
