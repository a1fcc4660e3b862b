// A step answering a string literal (a borrowed `&str`) is asked for `String`.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id)]
pub async fn send_welcome(run: Run, _input: Welcome) -> Result<(), JobError> {
    let _greeting = run.step("greet", async { Ok::<_, JobError>("hello") }).await?;
    Ok(())
}

fn main() {}