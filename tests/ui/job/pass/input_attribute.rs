// `#[input]` derives through the serde and schemars that jobs depends on; serde and schemars
// attributes still work on the type and its fields; `crate = ".."` reaches a renamed runtime
// (here through a facade module: this file is the module `job_input_attribute` of pass.rs).
use jobs::prelude::*;

mod renamed {
    pub use ::jobs as my_jobs;
}

#[input(crate = "crate::job_input_attribute::renamed::my_jobs")]
pub struct Renamed {
    pub id: u64,
}

#[job(key = "renamed:{id}", tenant = none, crate = "crate::job_input_attribute::renamed::my_jobs")]
async fn through_renamed(_run: Run, _input: Renamed) -> Result<(), JobError> {
    Ok(())
}

#[input]
#[derive(Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Welcome {
    pub user_id: u64,
    #[serde(default)]
    pub org_name: Option<String>,
}

#[input]
pub enum Plan {
    Free,
    Paid { seats: u32 },
}

#[job(key = "welcome:{user_id}", tenant = none)]
async fn send_greeting(_run: Run, _input: Welcome) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "plan", tenant = none)]
async fn change_plan(_run: Run, _input: Plan) -> Result<(), JobError> {
    Ok(())
}

#[test]
fn runs() {
    let _ = SendGreeting::descriptor();
    let _ = ChangePlan::descriptor();
    assert_eq!(ThroughRenamed::descriptor().input_type, "Renamed");
}
