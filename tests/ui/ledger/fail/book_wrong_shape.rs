// A book fn of the wrong shape is a type error at the path.
use jobs::prelude::*;

pub fn book() -> u32 {
    7
}

#[ledger(name = "payments", tenant = none, book = book)]
pub struct PostPayment;

fn main() {}
