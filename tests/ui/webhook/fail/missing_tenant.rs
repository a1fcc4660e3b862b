// A webhook states its tenant decision.
use jobs::prelude::*;
use jobs::webhook::{WebhookDelivery, WebhookTarget};

#[webhook(name = "orders.webhook")]
pub async fn hook(_run: &Run, delivery: &WebhookDelivery) -> Result<WebhookTarget, JobError> {
    WebhookTarget::found(delivery, None, None)
}

fn main() {}
