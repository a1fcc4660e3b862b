// `name`, `queue` and `handle` override the defaults taken from the fn; the handle has the
// fn's visibility and its docs.
#![deny(warnings)]
use jobs::prelude::*;

mod mail {
    use jobs::prelude::*;

    #[derive(Serialize, Deserialize, JsonSchema)]
    pub struct Welcome {
        pub user_id: u64,
        pub org_id: String,
    }

    /// Sends the welcome mail.
    #[job(
        key = "welcome:{user_id}",
        tenant = org_id,
        name = "send-welcome",
        queue = "email",
        handle = Welcomer,
        concurrency = 3,
    )]
    pub async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
        let _ = (run, input);
        Ok(())
    }
}

#[test]
fn runs() {
    let d = mail::Welcomer::descriptor();
    assert_eq!(d.name, "send-welcome");
    assert_eq!(d.queue, "email");
    assert_eq!(
        d.concurrency,
        Some(jobs::Concurrency {
            limit: 3,
            keyed: false,
            when_busy: jobs::WhenBusy::Wait
        })
    );
    let input = mail::Welcome {
        user_id: 1,
        org_id: "acme".into(),
    };
    assert_eq!(
        <mail::Welcomer as Job>::idempotency_key(&input),
        "welcome:1"
    );
    let _ = format!("{:?}", mail::Welcomer);
}
