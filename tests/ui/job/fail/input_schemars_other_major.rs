// A JsonSchema derived with schemars 0.8 is not the schemars 1.x trait jobs needs: the error
// names the major and the fix (`#[input]`).
use jobs::prelude::*;

#[derive(serde::Serialize, serde::Deserialize, schemars08::JsonSchema)]
#[schemars(crate = "schemars08")]
pub struct Welcome {
    pub user_id: u64,
}

#[job(key = "welcome:{user_id}", tenant = none)]
async fn send_welcome(_run: Run, _input: Welcome) -> Result<(), JobError> {
    Ok(())
}

fn main() {}
