// §30 item 27: each currency balances on its own, even when the totals cancel out.
use jobs::prelude::*;

fn main() {
    let _ = posting!("fx_1", [
        "eur:cash" => -1_000 EUR,
        "usd:cash" => 1_000 USD,
    ]);
}
