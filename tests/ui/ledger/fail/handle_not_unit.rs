// A ledger goes on a unit struct, the handle: its input is always a `Posting`.
use jobs::prelude::*;

#[ledger(name = "payments", tenant = none, book = driver)]
pub struct PostPayment {
    pub amount: i64,
}

fn main() {}
