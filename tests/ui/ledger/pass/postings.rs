// A ledger on the driver's book, one on an app's book, and literal postings that balance.
#![deny(warnings)]
use std::sync::Arc;

use jobs::ledger::{LedgerBook, MemoryBook};
use jobs::prelude::*;

/// Card payments.
#[ledger(name = "payments", tenant = per_tenant, book = driver)]
pub struct PostPayment;

#[ledger(name = "treasury", tenant = none, book = treasury_book, queue = "ledger",
         retry(attempts = 5))]
pub struct PostTreasury;

pub fn treasury_book(_run: &Run) -> Result<Arc<dyn LedgerBook>, JobError> {
    Ok(Arc::new(MemoryBook::new()))
}

#[test]
fn runs() {
    let fee: i64 = 30;
    let sale = posting!("pay_1", [
        "assets:cash" => 970 EUR,
        "expenses:fees" => (fee) EUR,
        "income:sales" => -1_000 EUR,
    ]);
    assert_eq!(sale.entries.len(), 3);
    let fx = posting!(String::from("fx_1"), [
        "eur:cash" => -1_000 EUR,
        "eur:fx" => 1_000 EUR,
        "usd:fx" => -1_080 USD,
        "usd:cash" => 1_080 USD,
    ]);
    assert_eq!(fx.key, "fx_1");
    assert_eq!(PostPayment::descriptor().name, "payments");
    assert_eq!(PostTreasury::descriptor().queue, "ledger");
}
