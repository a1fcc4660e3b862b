//! The webhook endpoint ledger in process memory: the memory driver's, and one an app can make
//! on its own for a sender outside a worker.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::driver::webhook_ledger::{
    AttemptsPurgeParams, EndpointStanding, WebhookAttempt, WebhookLedger,
};
use crate::error::JobError;

/// The attempts a [`MemoryWebhookLedger`] keeps per endpoint by default.
pub const MEMORY_LEDGER_RING: usize = 1000;

/// A ledger in process memory, for development and tests: a bounded ring of attempts per
/// endpoint, lost on restart. The [`MemoryDriver`](crate::driver::MemoryDriver) holds one.
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

    async fn attempts_purge(&self, params: &AttemptsPurgeParams) -> Result<u64, JobError> {
        let mut endpoints = self.endpoints.lock().unwrap_or_else(|e| e.into_inner());
        let mut left = u64::from(params.limit);
        let mut deleted = 0;
        // Each ring is newest first: its old attempts are at the back.
        for endpoint in endpoints.values_mut() {
            while left > 0
                && endpoint
                    .attempts
                    .back()
                    .is_some_and(|a| a.at < params.before)
            {
                endpoint.attempts.pop_back();
                left -= 1;
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}
