//! §30 item 20: a task's entries name their jobs by handle type, never by a string
//! (X_JOB_DECLARATION_INVALID).
//!
//! `Entry::of("send_digest", input)` is what a user coming from a string-keyed queue writes
//! first; rustc answers "this function takes 1 argument but 2 arguments were supplied" and
//! suggests removing the input. This rule refuses it at the string, naming the handle to
//! write. It reads tokens, not syntax, because entries are usually built inside `vec![..]`,
//! whose contents syn does not parse.

use heck::ToUpperCamelCase;
use proc_macro2::{Delimiter, Group, Literal, TokenStream, TokenTree};
use quote::{quote, ToTokens};

use crate::errors::Errors;

/// Reports every `Entry::of("name", ..)` in `body`.
pub fn entries_name_jobs_by_handle(errs: &mut Errors, body: &syn::Block) {
    for (name, _) in calls(body.to_token_stream()) {
        let text = name.to_string();
        let job = text.trim_matches('"');
        let handle = job.to_upper_camel_case();
        errs.at(
            name.span(),
            format!(
                "an entry names its job by the handle type `#[job]` generates, never by a \
                 string: write `Entry::of::<{handle}>(input)` (the handle of the `#[job]` fn \
                 `{job}`; a `handle = ..` or `name = ..` on that job changes it) \
                 (X_JOB_DECLARATION_INVALID)"
            ),
        );
    }
}

/// `tokens` with every `Entry::of("name", input)` replaced by a stand-in of the same type that
/// still evaluates `input`, so a refused task adds no arity error of rustc's to the macro's.
/// `refused` is the path of a `fn<T>() -> T` that is never called.
pub fn without_entries_by_name(tokens: TokenStream, refused: &TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(trees.len());
    let mut i = 0;
    while i < trees.len() {
        if let Some((_, rest)) = call_at(&trees, i) {
            out.extend(quote!({ let _ = (#rest); #refused() }));
            i += 5;
            continue;
        }
        match &trees[i] {
            TokenTree::Group(group) => {
                let inner = without_entries_by_name(group.stream(), refused);
                let mut rebuilt = Group::new(group.delimiter(), inner);
                rebuilt.set_span(group.span());
                out.push(TokenTree::Group(rebuilt));
            }
            tree => out.push(tree.clone()),
        }
        i += 1;
    }
    out.into_iter().collect()
}

/// Every `Entry::of("name", rest)` in `tokens`, nested groups included: the string and the
/// rest of the arguments.
fn calls(tokens: TokenStream) -> Vec<(Literal, TokenStream)> {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut found = Vec::new();
    for i in 0..trees.len() {
        if let Some(call) = call_at(&trees, i) {
            found.push(call);
        }
        if let TokenTree::Group(group) = &trees[i] {
            found.extend(calls(group.stream()));
        }
    }
    found
}

/// `Entry :: of ( "name" , rest )` starting at `trees[i]`.
fn call_at(trees: &[TokenTree], i: usize) -> Option<(Literal, TokenStream)> {
    let [TokenTree::Ident(entry), TokenTree::Punct(c1), TokenTree::Punct(c2), TokenTree::Ident(of), TokenTree::Group(args)] =
        trees.get(i..i + 5)?
    else {
        return None;
    };
    if entry != "Entry" || c1.as_char() != ':' || c2.as_char() != ':' || of != "of" {
        return None;
    }
    if args.delimiter() != Delimiter::Parenthesis {
        return None;
    }
    let mut inner = args.stream().into_iter();
    let Some(TokenTree::Literal(name)) = inner.next() else {
        return None;
    };
    let text = name.to_string();
    if !(text.starts_with('"') || text.starts_with("r\"") || text.starts_with("r#")) {
        return None;
    }
    // Past the comma: the input, which the stand-in still evaluates.
    let rest: TokenStream = inner
        .skip_while(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
        .collect();
    Some((name, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_entries_by_name_inside_macros() {
        let body: syn::Block = syn::parse_str(
            r#"{ vec![Entry::of("send_digest", Digest { day }), Entry::of::<Other>(x)] }"#,
        )
        .unwrap();
        let mut errs = Errors::new();
        entries_name_jobs_by_handle(&mut errs, &body);
        let err = errs.finish().unwrap_err().to_string();
        assert!(
            err.contains("write `Entry::of::<SendDigest>(input)`"),
            "{err}"
        );
        assert!(err.ends_with("(X_JOB_DECLARATION_INVALID)"), "{err}");
    }

    #[test]
    fn the_stand_in_keeps_the_input_and_drops_the_name() {
        let tokens: TokenStream =
            r#"vec![Entry::of("send_digest", Digest { day }), Entry::of::<Other>(x)]"#
                .parse()
                .unwrap();
        let out = without_entries_by_name(tokens, &quote!(refused)).to_string();
        assert_eq!(
            out,
            "vec ! [{ let _ = (Digest { day }) ; refused () } , Entry :: of ::< Other > (x)]"
        );
    }
}
