// An unknown argument lists every argument `#[ledger]` takes.
use jobs::prelude::*;

#[ledger(name = "payments", tenant = none, currency = "EUR")]
pub struct PostPayment;

fn main() {}
