// The handle is named after the fn (`receipt` -> `Receipt`); beside a struct `Receipt` that
// the body builds, that is refused with the fix instead of rustc's "defined multiple times".
use jobs::prelude::*;

pub struct Receipt {
    pub order_id: u64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Order {
    pub order_id: u64,
}

#[job(key = "receipt:{order_id}", tenant = none)]
pub async fn receipt(_run: Run, input: Order) -> Result<(), JobError> {
    let _ = Receipt {
        order_id: input.order_id,
    };
    Ok(())
}

fn main() {}
