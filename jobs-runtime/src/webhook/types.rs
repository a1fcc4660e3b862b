//! The outbound delivery's vocabulary: the endpoint and event handed to a sender per attempt,
//! a delivery job's input (ids only), the directory that resolves them, the sender's options
//! and what a delivered attempt got back. Apart from the sender so the data reads without the
//! HTTP machinery.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

/// Consecutive failed attempts after which an endpoint is disabled: roughly a day of a
/// retrying queue.
pub const DEFAULT_WEBHOOK_DISABLE_AFTER: u32 = 10;
/// How long one request may take, below the worker's default shutdown deadline (25 s) so a
/// drain lets a request already sent finish.
pub const DEFAULT_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest `Retry-After` honoured; a longer one is clamped to it.
pub const DEFAULT_WEBHOOK_MAX_DELAY: Duration = Duration::from_secs(3600);

/// Where and how to deliver: the app's id for the endpoint, its URL and secret, and headers
/// of its own (merged under the signature headers, which win).
#[derive(Clone)]
pub struct WebhookEndpoint {
    /// The app's id for the endpoint (what the ledger keys on).
    pub id: String,
    // Read by the sender (`sender.rs`) only: never public, never printed.
    pub(super) url: String,
    pub(super) secret: String,
    pub(super) headers: Vec<(String, String)>,
}

impl fmt::Debug for WebhookEndpoint {
    // Neither the URL (it may carry a token) nor the secret is ever printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookEndpoint")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl WebhookEndpoint {
    /// An endpoint with its URL and signing secret.
    pub fn new(id: impl Into<String>, url: impl Into<String>, secret: impl Into<String>) -> Self {
        WebhookEndpoint {
            id: id.into(),
            url: url.into(),
            secret: secret.into(),
            headers: Vec::new(),
        }
    }

    /// Adds a header of the endpoint's own (an id and topic or signature header of the same
    /// name is replaced by the framework's).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// One event: its id, topic and body (sent as is, `application/json` unless the endpoint's
/// headers say otherwise).
#[derive(Clone)]
pub struct WebhookEvent {
    /// The event's id (1-200 characters, no `:` or control characters).
    pub id: String,
    /// The topic (same rules).
    pub topic: String,
    /// The body, signed byte for byte.
    pub body: Vec<u8>,
}

impl fmt::Debug for WebhookEvent {
    // The body is a payload: only its length is printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookEvent")
            .field("id", &self.id)
            .field("topic", &self.topic)
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

impl WebhookEvent {
    /// An event with a raw body.
    pub fn new(id: impl Into<String>, topic: impl Into<String>, body: impl Into<Vec<u8>>) -> Self {
        WebhookEvent {
            id: id.into(),
            topic: topic.into(),
            body: body.into(),
        }
    }

    /// An event whose body is `value` as JSON.
    pub fn json(
        id: impl Into<String>,
        topic: impl Into<String>,
        value: &impl serde::Serialize,
    ) -> Result<Self, JobError> {
        let body = serde_json::to_vec(value).map_err(|e| {
            JobError::new(
                ErrorCode::WebhookEventInvalid,
                format!(
                    "the webhook event's body does not serialize: {}",
                    crate::error::redact_serde(&e)
                ),
            )
        })?;
        Ok(WebhookEvent::new(id, topic, body))
    }
}

/// A delivery job's input: which event to which endpoint. Only ids: the endpoint's URL and
/// secret are read per attempt from the app's [`WebhookDirectory`] (or a `#[webhook]` fn).
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct WebhookDelivery {
    /// The endpoint's id.
    pub endpoint_id: String,
    /// The event's id.
    pub event_id: String,
    /// The tenant the delivery belongs to (`#[webhook(tenant = per_tenant)]`'s `enqueue_for`
    /// sets it); `None` for a webhook of no tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

impl WebhookDelivery {
    /// The delivery of event `event_id` to endpoint `endpoint_id`, of no tenant.
    pub fn new(endpoint_id: impl Into<String>, event_id: impl Into<String>) -> Self {
        WebhookDelivery {
            endpoint_id: endpoint_id.into(),
            event_id: event_id.into(),
            tenant: None,
        }
    }

    /// The same delivery, for `tenant`.
    pub fn for_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }
}

/// Where a delivery job reads its endpoint and event, per attempt.
#[async_trait]
pub trait WebhookDirectory: Send + Sync {
    /// The endpoint under `endpoint_id`, or `None` (`X_WEBHOOK_ENDPOINT_UNKNOWN`).
    async fn endpoint(&self, endpoint_id: &str) -> Result<Option<WebhookEndpoint>, JobError>;
    /// The event under `event_id`, or `None` (`X_WEBHOOK_EVENT_UNKNOWN`).
    async fn event(&self, event_id: &str) -> Result<Option<WebhookEvent>, JobError>;
}

/// The sender's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookOptions {
    /// Consecutive failures that disable the endpoint ([`DEFAULT_WEBHOOK_DISABLE_AFTER`]).
    pub disable_after: u32,
    /// One request's timeout; keep it below the worker's shutdown deadline.
    pub timeout: Duration,
    /// Lets hosts resolve to loopback, private, link-local and metadata addresses.
    pub allow_private: bool,
    /// Lets `http://` URLs through (development only).
    pub development: bool,
    /// The longest `Retry-After` honoured.
    pub max_delay: Duration,
}

impl Default for WebhookOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl WebhookOptions {
    /// The defaults, as a constant (what a `#[webhook]` declaration starts from).
    pub const DEFAULT: WebhookOptions = WebhookOptions {
        disable_after: DEFAULT_WEBHOOK_DISABLE_AFTER,
        timeout: DEFAULT_WEBHOOK_TIMEOUT,
        allow_private: false,
        development: false,
        max_delay: DEFAULT_WEBHOOK_MAX_DELAY,
    };

    /// Checks that a request's timeout is below a worker's drain budget (its shutdown
    /// deadline), so a drain never has to cut a request already on the wire (`X_INVARIANT`).
    pub fn check_drain_budget(&self, shutdown_deadline: Duration) -> Result<(), JobError> {
        if self.timeout < shutdown_deadline {
            return Ok(());
        }
        Err(JobError::new(
            ErrorCode::Invariant,
            format!(
                "the webhook timeout of {}s is not below the worker's shutdown deadline of {}s",
                self.timeout.as_secs_f64(),
                shutdown_deadline.as_secs_f64()
            ),
        )
        .with_fix("lower the webhook `timeout` or raise the worker's `shutdown_deadline`"))
    }
}

/// What a delivered attempt got back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookDelivered {
    /// The receiver's 2xx status.
    pub status: u16,
    /// When the request was sent (the signed time).
    pub sent_at: Timestamp,
}
