// An expiry of zero would discard every job: refused, with what to write instead.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id, expires_in = "0s")]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

fn main() {}
