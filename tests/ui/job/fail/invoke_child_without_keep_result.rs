// `run.invoke` resumes the parent with the child's stored result: a child that does not keep
// its result (`keep_result`) cannot be invoked.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Sku {
    pub sku: String,
}

#[job(key = "price:{sku}", tenant = none)]
pub async fn price(_run: Run, _input: Sku) -> Result<u64, JobError> {
    Ok(100)
}

#[job(key = "checkout:{sku}", tenant = none)]
pub async fn checkout(run: Run, input: Sku) -> Result<(), JobError> {
    let cents = run.invoke(Price, input).await?;
    let _ = cents;
    Ok(())
}

fn main() {}
