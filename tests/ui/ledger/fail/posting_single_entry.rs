// §30 item 27: a posting has at least two entries (X_LEDGER_ENTRY_INVALID).
use jobs::prelude::*;

fn main() {
    let _ = posting!("pay_1", [
        "assets:cash" => 0 EUR,
    ]);
}
