// §30 item 27: currencies are ISO 4217 codes; accounts are not blank.
use jobs::prelude::*;

fn main() {
    let _ = posting!("pay_1", [
        "" => 1_000 eur,
        "income:sales" => -1_000 EURO,
    ]);
}
