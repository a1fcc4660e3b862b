// Every error of one declaration is reported together, each at its argument.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(
    retry(attempts = 0, backoff = expo),
    timeout = "0s",
    concurrency = 0,
    priority = 9,
)]
pub fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

fn main() {}
