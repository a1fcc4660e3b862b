//! A posting and its rules: balanced per currency, well formed, refused before a line is
//! written.

use std::collections::BTreeMap;

use jobs_grammar::currency::is_iso_4217;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, JobError};

/// The largest magnitude of a `minor` amount: 2^53 - 1, so every amount survives a JSON
/// round trip through any client exactly.
pub const MAX_SAFE_MINOR: i64 = (1 << 53) - 1;

/// An amount of money in integer minor units (cents): never a float.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Money {
    /// Minor units, signed (a debit and its credit carry opposite signs).
    pub minor: i64,
    /// The ISO 4217 code, upper-case (`EUR`).
    pub currency: String,
    /// The number of minor-unit digits, when stated; one per currency within a posting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<u8>,
}

impl Money {
    /// `minor` units of `currency`.
    pub fn new(minor: i64, currency: impl Into<String>) -> Self {
        Money {
            minor,
            currency: currency.into(),
            scale: None,
        }
    }

    /// States the scale (`2` for cents).
    pub fn with_scale(mut self, scale: u8) -> Self {
        self.scale = Some(scale);
        self
    }
}

/// One entry of a posting: an account and a signed amount.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct PostingEntry {
    /// The account: the app's own string (`assets:cash`).
    pub account: String,
    /// The signed amount.
    pub amount: Money,
}

impl PostingEntry {
    /// `amount` on `account`.
    pub fn new(account: impl Into<String>, amount: Money) -> Self {
        PostingEntry {
            account: account.into(),
            amount,
        }
    }
}

/// A double-entry posting: a key written once, and at least two entries that sum to zero in
/// each currency on its own. Build one with [`posting!`](crate::posting), which checks a
/// literal posting at compile time, or field by field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Posting {
    /// The idempotency key (a provider's payment id, say): posted once per ledger and tenant.
    pub key: String,
    /// The tenant the posting belongs to (required by a `tenant = per_tenant` ledger).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The entries, in order: line `n` is entry `n`.
    pub entries: Vec<PostingEntry>,
}

impl Posting {
    /// A posting of `entries` under `key`.
    pub fn new(key: impl Into<String>, entries: Vec<PostingEntry>) -> Self {
        Posting {
            key: key.into(),
            tenant: None,
            entries,
        }
    }

    /// Files the posting under `tenant`.
    pub fn for_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }
}

fn invalid(message: String) -> JobError {
    JobError::new(ErrorCode::LedgerEntryInvalid, message)
}

/// Refuses a posting that is malformed (`X_LEDGER_ENTRY_INVALID`: fewer than two entries, a
/// blank account, a `minor` beyond ±(2^53 - 1), a currency that is not ISO 4217, two scales in
/// one currency) or unbalanced (`X_LEDGER_UNBALANCED`: some currency's entries do not sum to
/// zero, each currency on its own). A blank key is `X_IDEMPOTENCY_REQUIRED`. Both ledger codes
/// are terminal. Messages name entries by position and currencies by code, never an amount, an
/// account or the key.
///
/// Public so that a request handler refuses at the request, before enqueueing.
///
/// ```
/// use jobs::ledger::{assert_balanced_posting, Money, Posting, PostingEntry};
/// use jobs::ErrorCode;
///
/// let fx = Posting::new("fx_1", vec![
///     PostingEntry::new("eur:cash", Money::new(-1_000, "EUR")),
///     PostingEntry::new("eur:fx", Money::new(1_000, "EUR")),
///     PostingEntry::new("usd:fx", Money::new(-1_080, "USD")),
///     PostingEntry::new("usd:cash", Money::new(1_080, "USD")),
/// ]);
/// assert!(assert_balanced_posting(&fx).is_ok());
///
/// let lopsided = Posting::new("pay_1", vec![
///     PostingEntry::new("cash", Money::new(1_000, "EUR")),
///     PostingEntry::new("revenue", Money::new(-999, "EUR")),
/// ]);
/// assert!(assert_balanced_posting(&lopsided).unwrap_err().is(ErrorCode::LedgerUnbalanced));
/// ```
pub fn assert_balanced_posting(posting: &Posting) -> Result<(), JobError> {
    if posting.key.trim().is_empty() {
        return Err(JobError::new(
            ErrorCode::IdempotencyRequired,
            "a posting needs a non-blank key: it is what makes the posting happen once",
        ));
    }
    if posting.entries.len() < 2 {
        return Err(invalid(format!(
            "a posting needs at least two entries, found {}",
            posting.entries.len()
        )));
    }
    let mut scales: BTreeMap<&str, (usize, Option<u8>)> = BTreeMap::new();
    let mut sums: BTreeMap<&str, i128> = BTreeMap::new();
    for (n, entry) in posting.entries.iter().enumerate() {
        if entry.account.trim().is_empty() {
            return Err(invalid(format!("entry {n} has a blank account")));
        }
        let money = &entry.amount;
        if money.minor.unsigned_abs() > MAX_SAFE_MINOR as u64 {
            return Err(invalid(format!(
                "entry {n}'s minor amount is beyond ±(2^53 - 1); amounts are safe integers"
            )));
        }
        if !is_iso_4217(&money.currency) {
            return Err(invalid(format!(
                "entry {n}'s currency is not an ISO 4217 code (three upper-case letters such as `EUR`)"
            )));
        }
        let currency = money.currency.as_str();
        match scales.get(currency) {
            Some((first, scale)) if *scale != money.scale => {
                return Err(invalid(format!(
                    "entries {first} and {n} state two scales for {currency}; one scale per currency"
                )));
            }
            Some(_) => {}
            None => {
                scales.insert(currency, (n, money.scale));
            }
        }
        *sums.entry(currency).or_insert(0) += i128::from(money.minor);
    }
    let unbalanced: Vec<&str> = sums
        .iter()
        .filter(|(_, sum)| **sum != 0)
        .map(|(currency, _)| *currency)
        .collect();
    if !unbalanced.is_empty() {
        return Err(JobError::new(
            ErrorCode::LedgerUnbalanced,
            format!(
                "the posting does not balance in {}: each currency's entries must sum to zero",
                unbalanced.join(", ")
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(account: &str, minor: i64, currency: &str) -> PostingEntry {
        PostingEntry::new(account, Money::new(minor, currency))
    }

    #[test]
    fn each_rule() {
        let ok = Posting::new("k", vec![entry("a", 5, "EUR"), entry("b", -5, "EUR")]);
        assert!(assert_balanced_posting(&ok).is_ok());
        let code = |p: &Posting| assert_balanced_posting(p).unwrap_err().code().unwrap();
        let one = Posting::new("k", vec![entry("a", 0, "EUR")]);
        assert_eq!(code(&one), ErrorCode::LedgerEntryInvalid);
        let blank = Posting::new("k", vec![entry(" ", 5, "EUR"), entry("b", -5, "EUR")]);
        assert_eq!(code(&blank), ErrorCode::LedgerEntryInvalid);
        let huge = Posting::new(
            "k",
            vec![entry("a", i64::MAX, "EUR"), entry("b", -i64::MAX, "EUR")],
        );
        assert_eq!(code(&huge), ErrorCode::LedgerEntryInvalid);
        let euro = Posting::new("k", vec![entry("a", 5, "EURO"), entry("b", -5, "EURO")]);
        assert_eq!(code(&euro), ErrorCode::LedgerEntryInvalid);
        let scales = Posting::new(
            "k",
            vec![
                PostingEntry::new("a", Money::new(5, "EUR").with_scale(2)),
                entry("b", -5, "EUR"),
            ],
        );
        assert_eq!(code(&scales), ErrorCode::LedgerEntryInvalid);
        let fx = Posting::new("k", vec![entry("a", 5, "EUR"), entry("b", -5, "USD")]);
        assert_eq!(code(&fx), ErrorCode::LedgerUnbalanced);
        let keyless = Posting::new(" ", vec![entry("a", 5, "EUR"), entry("b", -5, "EUR")]);
        assert_eq!(code(&keyless), ErrorCode::IdempotencyRequired);
    }

    #[test]
    fn messages_carry_no_amount_account_or_key() {
        let p = Posting::new(
            "pay_secret_42",
            vec![
                entry("acct:alice", 123_457, "EUR"),
                entry("acct:bob", -1, "EUR"),
            ],
        );
        let text = assert_balanced_posting(&p).unwrap_err().to_string();
        for secret in ["pay_secret_42", "alice", "bob", "123457", "123456"] {
            assert!(!text.contains(secret), "{text}");
        }
    }
}
