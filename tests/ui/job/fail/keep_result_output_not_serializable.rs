// `keep_result` stores the body's `Ok` value: its type must serialise, parse back and have a
// JSON Schema, as an input must. Refused at the return type.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Day {
    pub day: String,
}

// No derives: it cannot be stored.
pub struct Tally {
    pub orders: u64,
}

#[job(key = "tally:{day}", tenant = none, keep_result)]
pub async fn tally_orders(run: Run, input: Day) -> Result<Tally, JobError> {
    let _ = (run, input);
    Ok(Tally { orders: 0 })
}

fn main() {}
