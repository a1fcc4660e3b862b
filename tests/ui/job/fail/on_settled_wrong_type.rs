// The on_settled hook is typed by the job's input and output.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id, on_settled = welcome_settled)]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

async fn welcome_settled(settled: Settled<Welcome, u64>) -> Result<(), JobError> {
    let _ = settled;
    Ok(())
}

fn main() {}
