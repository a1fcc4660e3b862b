//! What a `#[webhook]` declaration runs: its lookup fn answers a [`WebhookTarget`] per attempt,
//! and [`run_webhook`] delivers it through a sender over the run's own store's endpoint ledger.

use std::sync::Arc;

use async_trait::async_trait;

use super::sender::WebhookSender;
use super::types::{
    WebhookDelivered, WebhookDelivery, WebhookEndpoint, WebhookEvent, WebhookOptions,
};
use crate::clock::Timestamp;
use crate::driver::webhook_ledger::{
    AttemptsPurgeParams, EndpointStanding, WebhookAttempt, WebhookLedger,
};
use crate::driver::JobDriver;
use crate::error::{ErrorCode, JobError};
use crate::run::Run;

/// What a `#[webhook]` fn answers for one attempt: the endpoint (URL and secret, read now and
/// never stored) and the event to send it.
#[derive(Debug, Clone)]
pub struct WebhookTarget {
    /// Where to send.
    pub endpoint: WebhookEndpoint,
    /// What to send.
    pub event: WebhookEvent,
}

impl WebhookTarget {
    /// The event to the endpoint.
    pub fn new(endpoint: WebhookEndpoint, event: WebhookEvent) -> Self {
        WebhookTarget { endpoint, event }
    }

    /// The target from two look-ups of the app's store: a missing endpoint is
    /// `X_WEBHOOK_ENDPOINT_UNKNOWN`, a missing event `X_WEBHOOK_EVENT_UNKNOWN` (both terminal:
    /// a retry would find nothing either).
    pub fn found(
        delivery: &WebhookDelivery,
        endpoint: Option<WebhookEndpoint>,
        event: Option<WebhookEvent>,
    ) -> Result<Self, JobError> {
        let Some(endpoint) = endpoint else {
            return Err(JobError::new(
                ErrorCode::WebhookEndpointUnknown,
                format!("no webhook endpoint `{}`", delivery.endpoint_id),
            )
            .with_fix("enqueue deliveries only to endpoints the app has stored"));
        };
        let Some(event) = event else {
            return Err(JobError::new(
                ErrorCode::WebhookEventUnknown,
                format!("no webhook event `{}`", delivery.event_id),
            )
            .with_fix("enqueue the delivery in the transaction that stores the event"));
        };
        Ok(WebhookTarget { endpoint, event })
    }
}

/// The idempotency key of a delivery: its endpoint and event ids, the endpoint's length first
/// so no two pairs of ids make one key.
#[doc(hidden)]
pub fn webhook_key(delivery: &WebhookDelivery) -> String {
    format!(
        "{}:{}:{}",
        delivery.endpoint_id.len(),
        delivery.endpoint_id,
        delivery.event_id
    )
}

/// Delivers a `#[webhook]` job's target once, through a sender over the run's own store's
/// endpoint ledger and clock. Not public API: what the declaration expands to.
#[doc(hidden)]
pub async fn run_webhook(
    run: &Run,
    options: WebhookOptions,
    target: WebhookTarget,
) -> Result<WebhookDelivered, JobError> {
    let driver = run.driver().clone();
    if driver.webhook_ledger().is_none() {
        return Err(JobError::new(
            ErrorCode::NotImplemented,
            format!(
                "webhook `{}` needs an endpoint ledger, and driver `{}` has none",
                run.job_name(),
                driver.name()
            ),
        )
        .with_fix(
            "run webhooks on a driver that keeps a webhook ledger (memory, Postgres, SQLite)",
        ));
    }
    let sender = WebhookSender::builder(Arc::new(DriverLedger(driver)))
        .options(options)
        .clock(run.clock().clone())
        .build_shared()?;
    sender
        .deliver_in(run, &target.endpoint, &target.event)
        .await
}

/// The run's driver's ledger, owned (a sender holds its ledger by `Arc`).
struct DriverLedger(Arc<dyn JobDriver>);

impl std::fmt::Debug for DriverLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("DriverLedger").field(&self.0.name()).finish()
    }
}

impl DriverLedger {
    fn ledger(&self) -> &dyn WebhookLedger {
        self.0
            .webhook_ledger()
            .expect("checked by run_webhook before the sender is built")
    }
}

#[async_trait]
impl WebhookLedger for DriverLedger {
    async fn standing(&self, endpoint_id: &str) -> Result<EndpointStanding, JobError> {
        self.ledger().standing(endpoint_id).await
    }

    async fn record(&self, attempt: &WebhookAttempt) -> Result<EndpointStanding, JobError> {
        self.ledger().record(attempt).await
    }

    async fn disable(&self, endpoint_id: &str, at: Timestamp) -> Result<(), JobError> {
        self.ledger().disable(endpoint_id, at).await
    }

    async fn enable(&self, endpoint_id: &str) -> Result<(), JobError> {
        self.ledger().enable(endpoint_id).await
    }

    async fn attempts(
        &self,
        endpoint_id: &str,
        limit: usize,
    ) -> Result<Vec<WebhookAttempt>, JobError> {
        self.ledger().attempts(endpoint_id, limit).await
    }

    async fn attempts_purge(&self, params: &AttemptsPurgeParams) -> Result<u64, JobError> {
        self.ledger().attempts_purge(params).await
    }

    async fn is_disabled(&self, endpoint_id: &str) -> Result<bool, JobError> {
        self.ledger().is_disabled(endpoint_id).await
    }
}
