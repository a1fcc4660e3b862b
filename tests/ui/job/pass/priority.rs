// `priority = N` (-5..=5) reads into the descriptor, negative values too; leaving it out is
// the default, 0.
#![deny(warnings)]
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "urgent:{user_id}", tenant = org_id, priority = 5)]
pub async fn send_urgent(run: Run, input: Welcome) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

#[job(key = "later:{user_id}", tenant = org_id, priority = -5)]
pub async fn send_later(run: Run, input: Welcome) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

#[job(key = "plain:{user_id}", tenant = org_id)]
pub async fn send_plain(run: Run, input: Welcome) -> Result<(), JobError> {
    let _ = (run, input);
    Ok(())
}

#[test]
fn runs() {
    assert_eq!(SendUrgent::descriptor().priority, 5);
    assert_eq!(SendLater::descriptor().priority, -5);
    assert_eq!(SendPlain::descriptor().priority, jobs::DEFAULT_PRIORITY);
    assert_eq!(jobs::DEFAULT_PRIORITY, 0);
}
