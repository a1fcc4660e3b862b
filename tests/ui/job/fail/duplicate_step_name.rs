// Literal step names are unique within one body (X_STEP_DUPLICATE).
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id)]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    run.step("charge", async { Ok::<_, JobError>(input.user_id) }).await?;
    run.step("notify", async { Ok::<_, JobError>(()) }).await?;
    run.step("charge", async { Ok::<_, JobError>(input.user_id) }).await?;
    Ok(())
}

fn main() {}
