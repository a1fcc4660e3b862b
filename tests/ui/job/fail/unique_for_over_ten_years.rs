// A unique period over 10 years: refused (the runtime's MAX_UNIQUE_FOR).
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id, unique(for = "3651d"))]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

fn main() {}
