// A zero sleep is refused at the literal.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id)]
pub async fn send_welcome(run: Run, _input: Welcome) -> Result<(), JobError> {
    run.sleep("0s").await?;
    Ok(())
}

fn main() {}