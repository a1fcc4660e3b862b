// A step output bound as `&str` is asked for `String`.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

async fn fetch_name() -> Result<&'static str, JobError> {
    Ok("ada")
}

#[job(key = "welcome:{user_id}", tenant = org_id)]
pub async fn send_welcome(run: Run, _input: Welcome) -> Result<(), JobError> {
    let _name: &str = run.step("name", fetch_name()).await?;
    Ok(())
}

fn main() {}