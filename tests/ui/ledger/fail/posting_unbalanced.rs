// §30 item 27: a literal posting that does not sum to zero (X_LEDGER_UNBALANCED).
use jobs::prelude::*;

fn main() {
    let _ = posting!("pay_1", [
        "assets:cash" => 1_000 EUR,
        "income:sales" => -999 EUR,
    ]);
}
