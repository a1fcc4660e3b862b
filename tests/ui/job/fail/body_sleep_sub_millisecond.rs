// A sleep below a whole millisecond is refused at the literal, as `run.sleep` refuses the same
// text computed at run time (one duration rule, `jobs_grammar::duration`).
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id)]
pub async fn send_welcome(run: Run, _input: Welcome) -> Result<(), JobError> {
    run.sleep("1500us").await?;
    Ok(())
}

fn main() {}