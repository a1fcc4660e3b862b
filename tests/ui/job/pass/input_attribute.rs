// `#[input]` derives through the serde and schemars that jobs depends on; serde and schemars
// attributes still work on the type and its fields.
use jobs::prelude::*;

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
}
