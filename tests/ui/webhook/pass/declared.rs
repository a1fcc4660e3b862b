// A webhook of no tenant and one per tenant: typed enqueues, the sender settings as declared.
use jobs::prelude::*;
use jobs::webhook::{WebhookDelivery, WebhookEndpoint, WebhookEvent, WebhookTarget};

#[webhook(name = "orders.webhook", tenant = none, timeout = "10s", disable_after = 5, max_delay = "10m", queue = "webhooks", retry(attempts = 8))]
pub async fn order_webhook(
    _run: &Run,
    delivery: &WebhookDelivery,
) -> Result<WebhookTarget, JobError> {
    let endpoint = WebhookEndpoint::new(
        delivery.endpoint_id.clone(),
        "https://example.com/hooks",
        "whsec",
    );
    let event = WebhookEvent::new(delivery.event_id.clone(), "order.paid", b"{}".to_vec());
    Ok(WebhookTarget::new(endpoint, event))
}

#[webhook(name = "org.webhook", tenant = per_tenant, handle = OrgHook)]
pub async fn org_webhook(
    _run: &Run,
    delivery: &WebhookDelivery,
) -> Result<WebhookTarget, JobError> {
    WebhookTarget::found(delivery, None, None)
}

#[allow(dead_code)]
async fn enqueue(jobs: &Jobs) -> Result<(), JobError> {
    OrderWebhook::enqueue(jobs, WebhookDelivery::new("ep_1", "evt_1")).await?;
    OrgHook::enqueue_for(jobs, "acme", WebhookDelivery::new("ep_1", "evt_1")).await?;
    Ok(())
}

#[test]
fn runs() {
    assert_eq!(OrderWebhook::options().disable_after, 5);
    assert_eq!(OrderWebhook::descriptor().queue, "webhooks");
    assert_eq!(OrgHook::descriptor().name, "org.webhook");
}
