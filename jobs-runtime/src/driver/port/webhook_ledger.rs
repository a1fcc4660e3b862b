//! The webhook endpoint ledger: every delivery attempt, each endpoint's run of consecutive
//! failures, and whether it is disabled. Every driver has one (memory, Postgres, SQLite), so a
//! `#[webhook]` job records its attempts in the store its queue lives in.

use std::fmt;

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

/// What [`WebhookLedger::attempts_purge`] deletes: attempts sent before `before`, at most
/// `limit` of them, oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptsPurgeParams {
    /// Attempts sent strictly before this instant are deleted.
    pub before: Timestamp,
    /// The most rows one call deletes (a purge target calls again until fewer come back).
    pub limit: u32,
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

    /// Deletes old attempts (the purge job's `webhook_attempts` target); answers the rows
    /// deleted. An endpoint's standing is kept whatever its attempts.
    async fn attempts_purge(&self, params: &AttemptsPurgeParams) -> Result<u64, JobError>;

    /// Whether deliveries to the endpoint are refused.
    async fn is_disabled(&self, endpoint_id: &str) -> Result<bool, JobError> {
        Ok(self.standing(endpoint_id).await?.disabled)
    }
}
