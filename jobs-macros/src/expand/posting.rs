//! `posting!`: parse a literal posting, check what the tokens decide, then build the
//! runtime's `Posting`.

use proc_macro2::TokenStream;
use quote::quote;

use crate::check;
use crate::errors::Errors;
use crate::value::posting::{Amount, PostingLit};

/// Expands `posting!(key, [..])`.
pub fn expand(input: TokenStream) -> syn::Result<TokenStream> {
    let posting: PostingLit = syn::parse2(input).map_err(with_shape)?;
    let mut errs = Errors::new();
    check::posting::posting(&mut errs, &posting);
    errs.finish()?;
    let key = &posting.key;
    let entries = posting.entries.iter().map(|entry| {
        let account = &entry.account;
        let currency = entry.currency.to_string();
        let amount = match &entry.amount {
            Amount::Literal(_, tokens) => quote!(#tokens),
            // `(fee)` is written for the parser's sake; the call needs no parentheses.
            Amount::Computed(syn::Expr::Paren(paren)) => {
                let inner = &paren.expr;
                quote!(#inner)
            }
            Amount::Computed(expr) => quote!(#expr),
        };
        quote! {
            ::jobs::ledger::PostingEntry::new(
                #account,
                ::jobs::ledger::Money::new(#amount, #currency),
            )
        }
    });
    Ok(quote! {
        ::jobs::ledger::Posting::new(#key, ::std::vec![#(#entries),*])
    })
}

/// syn's own parse errors ("expected `=>`") with the shape of a posting and the code; the
/// parser's errors already carry both.
fn with_shape(errors: syn::Error) -> syn::Error {
    let mut all = errors.into_iter().map(|error| {
        let message = error.to_string();
        if message.contains("(X_") {
            return error;
        }
        syn::Error::new(
            error.span(),
            format!(
                "{message}: write `posting!(key, [\"account\" => 1_000 EUR, \"other\" => \
                 -1_000 EUR])` (X_LEDGER_ENTRY_INVALID)"
            ),
        )
    });
    let mut first = all
        .next()
        .expect("a parse error carries at least one error");
    first.extend(all);
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(input: &str) -> Result<String, String> {
        expand(input.parse().unwrap())
            .map(|tokens| tokens.to_string())
            .map_err(|err| {
                err.into_iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
    }

    #[test]
    fn a_balanced_fx_posting() {
        let out = expand_str(
            r#""fx_1", ["eur:cash" => -1_000 EUR, "eur:fx" => 1_000 EUR,
                        "usd:fx" => -1_080 USD, "usd:cash" => (amount) USD]"#,
        )
        .unwrap();
        assert!(out.contains("Money :: new (- 1_000 , \"EUR\")"), "{out}");
        assert!(out.contains("Money :: new (amount , \"USD\")"), "{out}");
    }

    #[test]
    fn each_literal_rule() {
        let err = expand_str(r#""k", ["cash" => 5 EUR]"#).unwrap_err();
        assert!(err.contains("at least two entries"), "{err}");
        let err = expand_str(r#""k", ["cash" => 5 EUR, "sales" => -4 EUR]"#).unwrap_err();
        assert!(err.contains("does not balance in EUR (off by 1)"), "{err}");
        let err = expand_str(r#""k", ["" => 5 eur, "sales" => -5 EUR]"#).unwrap_err();
        assert!(err.contains("account cannot be blank"), "{err}");
        assert!(err.contains("did you mean `EUR`?"), "{err}");
        let err = expand_str(r#""k", ["a" => 5.5 EUR, "b" => -5 EUR]"#).unwrap_err();
        assert!(err.contains("never a float"), "{err}");
    }
}
