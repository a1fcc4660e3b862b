// A negative unique period: refused at the literal.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id, unique(for = "-1h"))]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

fn main() {}
