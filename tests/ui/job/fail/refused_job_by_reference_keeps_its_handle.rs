// A by-reference input is refused; the stand-in takes the type it refers to.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id)]
pub async fn send_welcome(run: Run, input: &Welcome) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

pub async fn sign_up(jobs: &Jobs) -> Result<(), JobError> {
    SendWelcome::enqueue(jobs, Welcome { user_id: 7, org_id: "acme".into() }).await?;
    Ok(())
}

fn main() {}