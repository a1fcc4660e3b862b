// Money is integer minor units, never a float.
use jobs::prelude::*;

fn main() {
    let _ = posting!("pay_1", [
        "assets:cash" => 10.50 EUR,
        "income:sales" => -1_050 EUR,
    ]);
}
