// §30 item 26: a ledger is named.
use jobs::prelude::*;

#[ledger(tenant = none, book = driver)]
pub struct PostPayment;

fn main() {}
