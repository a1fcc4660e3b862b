// A template key over the input's fields and a field tenant: the smallest real declaration.
#![deny(warnings)]
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Welcome {
    pub user_id: u64,
    pub org_id: String,
}

#[job(key = "welcome:{user_id}", tenant = org_id)]
pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    run.step("send", async { Ok::<_, JobError>(input.user_id) })
        .await?;
    run.step("follow-up", async { Ok::<_, JobError>(()) })
        .await?;
    Ok(())
}

#[test]
fn runs() {
    let input = Welcome {
        user_id: 7,
        org_id: "acme".into(),
    };
    assert_eq!(SendWelcome::idempotency_key(&input), "welcome:7");
    assert_eq!(SendWelcome::tenant(&input).as_deref(), Some("acme"));
    assert_eq!(SendWelcome::concurrency_key(&input), None);

    let d = SendWelcome::descriptor();
    assert_eq!(d.name, "send_welcome");
    assert_eq!(d.queue, "default");
    assert_eq!(d.tenant, jobs::TenantMode::Field("org_id"));
    assert_eq!(d.input_type, "Welcome");
    assert!(!d.on_settled);
}
