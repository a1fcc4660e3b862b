// A debounced job is due only after its window: an expiry within it would discard every job.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id, debounce = "1m", expires_in = "30s")]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

fn main() {}
