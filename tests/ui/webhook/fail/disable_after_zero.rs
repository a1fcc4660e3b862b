// Disabling after zero failures would refuse every endpoint.
use jobs::prelude::*;
use jobs::webhook::{WebhookDelivery, WebhookTarget};

#[webhook(name = "orders.webhook", tenant = none, disable_after = 0)]
pub async fn hook(_run: &Run, delivery: &WebhookDelivery) -> Result<WebhookTarget, JobError> {
    WebhookTarget::found(delivery, None, None)
}

fn main() {}
