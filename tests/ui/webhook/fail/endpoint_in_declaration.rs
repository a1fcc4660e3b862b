// An endpoint is read per attempt, never declared.
use jobs::prelude::*;
use jobs::webhook::{WebhookDelivery, WebhookTarget};

#[webhook(name = "orders.webhook", tenant = none, url = "https://example.com")]
pub async fn hook(_run: &Run, delivery: &WebhookDelivery) -> Result<WebhookTarget, JobError> {
    WebhookTarget::found(delivery, None, None)
}

fn main() {}
