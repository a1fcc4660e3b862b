// A literal wait_for_event timeout is read at compile time.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id)]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    let key = input.user_id.to_string();
    let _paid: Option<u64> = run.wait_for_event("paid", &key, "-5s").await?;
    Ok(())
}

fn main() {}