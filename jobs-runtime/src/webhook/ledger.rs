//! The endpoint ledger: every delivery attempt, each endpoint's run of consecutive failures,
//! and whether it is disabled. A port ([`WebhookLedger`]) with a memory store here and SQL
//! stores beside the drivers.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::error::JobError;

/// One delivery attempt, as the ledger keeps it. It holds no URL, secret or body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookAttempt {
    /// The endpoint's id (the app's, never its URL).
    pub endpoint_id: String,
    /// The event delivered.
    pub event_id: String,
    /// The event's topic.
    pub topic: String,
    /// When the request was sent.
    pub at: Timestamp,
    /// The receiver's HTTP status, when it answered.
    pub status: Option<u16>,
    /// Whether the receiver took it (2xx).
    pub delivered: bool,
    /// The code of the failure (`X_WEBHOOK_...`), when it failed.
    pub error_code: Option<String>,
}

/// An endpoint's standing in the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EndpointStanding {
    /// Failed attempts since the last delivered one (or the last `enable`).
    pub consecutive_failures: u32,
    /// Whether deliveries to it are refused (`X_WEBHOOK_ENDPOINT_DISABLED`).
    pub disabled: bool,
}

/// Where delivery attempts are recorded and endpoints disabled. Asked before every send
/// (`is_disabled`), written after every answer (`record`), before the delivery's error is
/// raised. Re-enabling is always the app's decision (`enable`).
#[async_trait]
pub trait WebhookLedger: Send + Sync + fmt::Debug + 'static {
    /// The endpoint's standing (a never-seen endpoint: no failures, enabled).
    async fn standing(&self, endpoint_id: &str) -> Result<EndpointStanding, JobError>;

    /// Records an attempt and moves the endpoint's failure run: a delivered attempt resets it,
    /// a failed one adds one. Answers the standing after the attempt.
    async fn record(&self, attempt: &WebhookAttempt) -> Result<EndpointStanding, JobError>;

    /// Disables the endpoint (`at` is when).
    async fn disable(&self, endpoint_id: &str, at: Timestamp) -> Result<(), JobError>;

    /// Enables the endpoint again and resets its failure run.
    async fn enable(&self, endpoint_id: &str) -> Result<(), JobError>;

    /// The endpoint's latest attempts, newest first, at most `limit`.
    async fn attempts(
        &self,
        endpoint_id: &str,
        limit: usize,
    ) -> Result<Vec<WebhookAttempt>, JobError>;

    /// Whether deliveries to the endpoint are refused.
    async fn is_disabled(&self, endpoint_id: &str) -> Result<bool, JobError> {
        Ok(self.standing(endpoint_id).await?.disabled)
    }
}

/// The attempts a [`MemoryWebhookLedger`] keeps per endpoint by default.
pub const MEMORY_LEDGER_RING: usize = 1000;

/// A ledger in process memory, for development and tests: a bounded ring of attempts per
/// endpoint, lost on restart.
pub struct MemoryWebhookLedger {
    ring: usize,
    endpoints: Mutex<HashMap<String, MemoryEndpoint>>,
}

#[derive(Default)]
struct MemoryEndpoint {
    standing: EndpointStanding,
    attempts: VecDeque<WebhookAttempt>,
}

impl fmt::Debug for MemoryWebhookLedger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryWebhookLedger")
            .field("ring", &self.ring)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryWebhookLedger {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryWebhookLedger {
    /// A ledger keeping [`MEMORY_LEDGER_RING`] attempts per endpoint.
    pub fn new() -> Self {
        Self::with_ring(MEMORY_LEDGER_RING)
    }

    /// A ledger keeping the latest `ring` attempts per endpoint (at least one).
    pub fn with_ring(ring: usize) -> Self {
        MemoryWebhookLedger {
            ring: ring.max(1),
            endpoints: Mutex::default(),
        }
    }

    fn with<T>(&self, endpoint_id: &str, f: impl FnOnce(&mut MemoryEndpoint) -> T) -> T {
        let mut endpoints = self.endpoints.lock().unwrap_or_else(|e| e.into_inner());
        f(endpoints.entry(endpoint_id.to_string()).or_default())
    }
}

#[async_trait]
impl WebhookLedger for MemoryWebhookLedger {
    async fn standing(&self, endpoint_id: &str) -> Result<EndpointStanding, JobError> {
        Ok(self.with(endpoint_id, |e| e.standing))
    }

    async fn record(&self, attempt: &WebhookAttempt) -> Result<EndpointStanding, JobError> {
        let ring = self.ring;
        Ok(self.with(&attempt.endpoint_id, |e| {
            if e.attempts.len() == ring {
                e.attempts.pop_back();
            }
            e.attempts.push_front(attempt.clone());
            e.standing.consecutive_failures = if attempt.delivered {
                0
            } else {
                e.standing.consecutive_failures.saturating_add(1)
            };
            e.standing
        }))
    }

    async fn disable(&self, endpoint_id: &str, _at: Timestamp) -> Result<(), JobError> {
        self.with(endpoint_id, |e| e.standing.disabled = true);
        Ok(())
    }

    async fn enable(&self, endpoint_id: &str) -> Result<(), JobError> {
        self.with(endpoint_id, |e| e.standing = EndpointStanding::default());
        Ok(())
    }

    async fn attempts(
        &self,
        endpoint_id: &str,
        limit: usize,
    ) -> Result<Vec<WebhookAttempt>, JobError> {
        Ok(self.with(endpoint_id, |e| {
            e.attempts.iter().take(limit).cloned().collect()
        }))
    }
}
