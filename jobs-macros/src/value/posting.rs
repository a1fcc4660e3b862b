//! `posting!(key, [account => amount CURRENCY, ..])`: a posting written as a literal, parsed
//! here and checked at compile time (seed-inventory §30 item 27) by `crate::check::posting`.
//!
//! ```text
//! posting!("pay_123", [
//!     "assets:cash"  => 1_000 EUR,
//!     "income:sales" => -1_000 EUR,
//!     "fees"         => (fee) EUR,     // a computed amount: checked at run time only
//! ])
//! ```

use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{bracketed, Expr, Ident, LitInt, Token};

/// The whole literal.
pub struct PostingLit {
    /// The key expression.
    pub key: Expr,
    /// The `[..]` list, as written.
    pub bracket: proc_macro2::Span,
    /// The entries.
    pub entries: Vec<EntryLit>,
}

/// One `account => amount CURRENCY`.
pub struct EntryLit {
    /// The account expression.
    pub account: Expr,
    /// The amount.
    pub amount: Amount,
    /// The currency code, as written.
    pub currency: Ident,
}

/// An amount: a literal (checked at compile time) or a parenthesised expression.
pub enum Amount {
    /// `1_000`, `-1_000`: the value and the tokens.
    Literal(i128, proc_macro2::TokenStream),
    /// `(expr)` or `{ expr }`.
    Computed(Expr),
}

impl Parse for EntryLit {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let account: Expr = input.parse()?;
        input.parse::<Token![=>]>()?;
        let amount = if input.peek(Token![-]) || input.peek(LitInt) {
            let negative = input.parse::<Option<Token![-]>>()?;
            let lit: LitInt = input.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "an amount is integer minor units (`1_000` for 10.00 EUR) or a \
                     parenthesised expression `(amount)` (X_LEDGER_ENTRY_INVALID)",
                )
            })?;
            if !lit.suffix().is_empty() {
                return Err(syn::Error::new_spanned(
                    &lit,
                    format!(
                        "write the amount without the `{}` suffix: it is i64 minor units \
                         (X_LEDGER_ENTRY_INVALID)",
                        lit.suffix()
                    ),
                ));
            }
            let value: i128 = lit.base10_parse().map_err(|_| {
                syn::Error::new_spanned(
                    &lit,
                    "the amount does not fit in minor units; split it over several postings \
                     (X_LEDGER_ENTRY_INVALID)",
                )
            })?;
            let value = if negative.is_some() { -value } else { value };
            let tokens = quote::quote!(#negative #lit);
            Amount::Literal(value, tokens)
        } else if input.peek(syn::token::Paren) || input.peek(syn::token::Brace) {
            Amount::Computed(input.parse()?)
        } else if input.peek(syn::LitFloat) {
            let lit: syn::LitFloat = input.parse()?;
            return Err(syn::Error::new_spanned(
                lit,
                "money is integer minor units, never a float: write `1_050 EUR` for 10.50 EUR \
                 (X_LEDGER_ENTRY_INVALID)",
            ));
        } else {
            return Err(input.error(
                "expected an amount in minor units (`1_000`) or a parenthesised expression \
                 `(amount)`, then the currency (`EUR`) (X_LEDGER_ENTRY_INVALID)",
            ));
        };
        let currency: Ident = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected the ISO 4217 currency after the amount, e.g. `1_000 EUR` \
                 (X_LEDGER_ENTRY_INVALID)",
            )
        })?;
        Ok(EntryLit {
            account,
            amount,
            currency,
        })
    }
}

impl Parse for PostingLit {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let key: Expr = input.parse()?;
        input.parse::<Token![,]>()?;
        let content;
        let bracket = bracketed!(content in input);
        let entries = Punctuated::<EntryLit, Token![,]>::parse_terminated(&content)?;
        input.parse::<Option<Token![,]>>()?;
        Ok(PostingLit {
            key,
            bracket: bracket.span.join(),
            entries: entries.into_iter().collect(),
        })
    }
}
