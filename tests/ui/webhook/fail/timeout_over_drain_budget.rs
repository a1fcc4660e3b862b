// One request must finish within the drain budget.
use jobs::prelude::*;
use jobs::webhook::{WebhookDelivery, WebhookTarget};

#[webhook(name = "orders.webhook", tenant = none, timeout = "30s")]
pub async fn hook(_run: &Run, delivery: &WebhookDelivery) -> Result<WebhookTarget, JobError> {
    WebhookTarget::found(delivery, None, None)
}

fn main() {}
