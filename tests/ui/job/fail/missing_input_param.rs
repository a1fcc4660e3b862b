// The body takes the run context and then the input.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id)]
pub async fn send_welcome(run: Run) -> Result<(), JobError> {
    let _ = run;
    Ok(())
}

fn main() {}
