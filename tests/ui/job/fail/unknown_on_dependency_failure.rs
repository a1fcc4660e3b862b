// on_dependency_failure is cancel or run.
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Day {
    pub day: String,
}

#[job(key = "report:{day}", tenant = none, on_dependency_failure = retry)]
pub async fn report(run: Run, input: Day) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

fn main() {}
