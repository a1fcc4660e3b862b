// A refused #[job] still emits its handle: call sites add no errors of their own.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id, timeout = "0s")]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<u64, JobError> {
    let _ = run;
    Ok(input.user_id)
}

#[task(cron = "0 9 * * *", tz = "UTC")]
fn daily(_at: Occurrence) -> Vec<Entry> {
    vec![Entry::of::<SendWelcome>(Welcome { user_id: 1, org_id: "acme".into() })]
}

pub async fn sign_up(jobs: &Jobs) -> Result<(), JobError> {
    let input = Welcome { user_id: 7, org_id: "acme".into() };
    SendWelcome::enqueue(jobs, input).await?;
    jobs.enqueue::<SendWelcome>(Welcome { user_id: 8, org_id: "acme".into() }).await?;
    let _name = SendWelcome::descriptor().name;
    Ok(())
}

fn main() {}