// The on_settled hook takes the job's own input type.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id, on_settled = welcome_settled)]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<u64, JobError> {
    let _ = run;
    Ok(input.user_id)
}

async fn welcome_settled(settled: Settled<String, u64>) -> Result<(), JobError> {
    let _ = settled;
    Ok(())
}

fn main() {}