// §30 item 26: a ledger names its book; there is no default book to write money into.
use jobs::prelude::*;

#[ledger(name = "payments", tenant = per_tenant)]
pub struct PostPayment;

fn main() {}
