// An unknown argument lists every argument `#[webhook]` takes.
use jobs::prelude::*;
use jobs::webhook::{WebhookDelivery, WebhookTarget};

#[webhook(name = "org.webhook", tenant = none, retries = 3)]
pub async fn org_webhook(_run: &Run, delivery: &WebhookDelivery) -> Result<WebhookTarget, JobError> {
    WebhookTarget::found(delivery, None, None)
}

fn main() {}
