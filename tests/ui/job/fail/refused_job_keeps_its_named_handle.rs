// Arguments that do not parse still name the stand-in handle: `handle = Welcomer` is kept.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id, handle = Welcomer, qeue = "email")]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

pub async fn sign_up(jobs: &Jobs) -> Result<(), JobError> {
    Welcomer::enqueue(jobs, Welcome { user_id: 7, org_id: "acme".into() }).await?;
    Ok(())
}

fn main() {}