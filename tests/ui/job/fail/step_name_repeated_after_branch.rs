// A name used in an arm and again after the branch is on one path: refused, with the fix.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id)]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    if input.user_id % 2 == 0 {
        run.step("greet", async { Ok::<_, JobError>(1u8) }).await?;
    } else {
        run.step("greet", async { Ok::<_, JobError>(2u8) }).await?;
    }
    run.step("greet", async { Ok::<_, JobError>(3u8) }).await?;
    Ok(())
}

fn main() {}