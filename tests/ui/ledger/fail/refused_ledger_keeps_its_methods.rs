// A refused #[ledger] keeps its handle's methods: call sites add no errors of their own.
use jobs::prelude::*;

#[ledger(name = "payments", tenant = per_tenant)]
pub struct PostPayment;

pub async fn pay(jobs: &Jobs, amount: i64) -> Result<(), JobError> {
    PostPayment::enqueue(jobs, posting!("pay_1", [
        "assets:stripe" => (amount) EUR,
        "income:sales" => (-amount) EUR,
    ])).await?;
    Ok(())
}

fn main() {}
