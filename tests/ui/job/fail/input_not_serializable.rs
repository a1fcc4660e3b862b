// The input must be Serialize + Deserialize + JsonSchema: the queue stores it and the manifest
// publishes its schema.
use jobs::prelude::*;

// Deserialize only: no Serialize, no JsonSchema.
#[derive(Deserialize)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id)]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

fn main() {}
