//! The rules of a literal posting (`posting!`), §30 item 27: what can be decided from the
//! tokens is refused at compile time, with the codes `assert_balanced_posting` raises at run
//! time for the same faults.

use std::collections::BTreeMap;

use jobs_grammar::currency::is_iso_4217;

use crate::errors::Errors;
use crate::value::lit_str;
use crate::value::posting::{Amount, PostingLit};

/// 2^53 - 1: the largest magnitude of a minor amount.
const MAX_SAFE_MINOR: i128 = (1 << 53) - 1;

/// Every rule, in order.
pub fn posting(errs: &mut Errors, posting: &PostingLit) {
    at_least_two_entries(errs, posting);
    entries_are_well_formed(errs, posting);
    balanced_per_currency(errs, posting);
}

/// A posting moves money between at least two accounts.
fn at_least_two_entries(errs: &mut Errors, posting: &PostingLit) {
    if posting.entries.len() < 2 {
        errs.at(
            posting.bracket,
            format!(
                "a posting needs at least two entries (a debit and its credit), found {} \
                 (X_LEDGER_ENTRY_INVALID)",
                posting.entries.len()
            ),
        );
    }
}

/// Non-blank literal accounts, ISO 4217 currencies, safe-integer literal amounts.
fn entries_are_well_formed(errs: &mut Errors, posting: &PostingLit) {
    for entry in &posting.entries {
        if lit_str(&entry.account).is_some_and(|lit| lit.value().trim().is_empty()) {
            errs.spanned(
                &entry.account,
                "an entry's account cannot be blank (X_LEDGER_ENTRY_INVALID)",
            );
        }
        let code = entry.currency.to_string();
        if !is_iso_4217(&code) {
            let hint = if is_iso_4217(&code.to_uppercase()) {
                format!("; did you mean `{}`?", code.to_uppercase())
            } else {
                String::new()
            };
            errs.spanned(
                &entry.currency,
                format!("`{code}` is not an ISO 4217 currency code{hint} (X_LEDGER_ENTRY_INVALID)"),
            );
        }
        if let Amount::Literal(value, tokens) = &entry.amount {
            if value.abs() > MAX_SAFE_MINOR {
                errs.spanned(
                    tokens,
                    "an amount is beyond ±(2^53 - 1) minor units (X_LEDGER_ENTRY_INVALID)",
                );
            }
        }
    }
}

/// Each currency's literal entries sum to zero on their own (an FX posting balances in each
/// currency). A currency with a computed amount is left to the run-time check.
fn balanced_per_currency(errs: &mut Errors, posting: &PostingLit) {
    let mut sums: BTreeMap<String, Option<i128>> = BTreeMap::new();
    for entry in &posting.entries {
        let slot = sums.entry(entry.currency.to_string()).or_insert(Some(0));
        *slot = match (&entry.amount, *slot) {
            (Amount::Literal(value, _), Some(sum)) => Some(sum + value),
            _ => None,
        };
    }
    let unbalanced: Vec<String> = sums
        .into_iter()
        .filter_map(|(currency, sum)| match sum {
            Some(sum) if sum != 0 => Some(format!("{currency} (off by {sum})")),
            _ => None,
        })
        .collect();
    if posting.entries.len() >= 2 && !unbalanced.is_empty() {
        errs.at(
            posting.bracket,
            format!(
                "this posting does not balance in {}: each currency's entries must sum to \
                 zero (X_LEDGER_UNBALANCED)",
                unbalanced.join(", ")
            ),
        );
    }
}
