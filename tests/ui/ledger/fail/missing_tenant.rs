// §30 item 26: a ledger states its tenant decision (X_JOB_TENANT_REQUIRED).
use jobs::prelude::*;

#[ledger(name = "payments", book = driver)]
pub struct PostPayment;

fn main() {}
