//! The built-in targets: expired events, finished jobs past their retention windows with the
//! steps of their runs, and the webhook ledger's old attempts. Each deletes in bounded batches until a batch comes back short, so
//! no statement holds many locks or runs long.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::PurgeTarget;
use crate::clock::Timestamp;
use crate::driver::webhook_ledger::AttemptsPurgeParams;
use crate::driver::{EventPurgeParams, JobDriver};
use crate::error::{ErrorCode, JobError};
use crate::maintenance::Retention;

/// Events per delete statement unless set with [`ExpiredEvents::batch`].
pub const DEFAULT_EVENT_PURGE_BATCH: u32 = 5_000;

/// How long the webhook ledger keeps an attempt unless [`Purge::webhook_attempts`] says
/// otherwise: a week, as long as a failed or dead job is kept.
///
/// [`Purge::webhook_attempts`]: super::Purge::webhook_attempts
pub const DEFAULT_WEBHOOK_ATTEMPT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Attempts per delete statement of [`WebhookAttempts`].
pub const DEFAULT_WEBHOOK_ATTEMPT_PURGE_BATCH: u32 = 5_000;

/// Calls `delete` (one bounded delete of at most `batch` rows) until a call deletes fewer:
/// the rows deleted in all.
async fn in_batches<F, Fut>(batch: u32, mut delete: F) -> Result<u64, JobError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<u64, JobError>>,
{
    let mut total = 0;
    loop {
        let gone = delete().await?;
        total += gone;
        if gone < u64::from(batch) {
            return Ok(total);
        }
    }
}

/// Events whose expiry has passed (`event_purge` on the driver): no wait can match them any
/// more. Named `events`.
pub struct ExpiredEvents {
    driver: Arc<dyn JobDriver>,
    batch: u32,
}

impl std::fmt::Debug for ExpiredEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExpiredEvents")
            .field("driver", &self.driver.name())
            .field("batch", &self.batch)
            .finish()
    }
}

impl ExpiredEvents {
    /// The target over `driver`'s events, in batches of [`DEFAULT_EVENT_PURGE_BATCH`].
    pub fn new(driver: Arc<dyn JobDriver>) -> Self {
        ExpiredEvents {
            driver,
            batch: DEFAULT_EVENT_PURGE_BATCH,
        }
    }

    /// Events per delete statement (at least 1).
    pub fn batch(mut self, events: u32) -> Self {
        self.batch = events.max(1);
        self
    }
}

#[async_trait]
impl PurgeTarget for ExpiredEvents {
    fn name(&self) -> &str {
        "events"
    }

    async fn purge_expired(&self, now: Timestamp) -> Result<u64, JobError> {
        let params = EventPurgeParams {
            now,
            limit: self.batch,
        };
        in_batches(self.batch, || self.driver.event_purge(&params)).await
    }
}

/// Finished jobs past their [`Retention`] windows, with the steps of their runs (`job_purge`
/// on the driver: a job and its steps go in one statement, so no step outlives its job).
/// Named `jobs`.
pub struct FinishedJobs {
    driver: Arc<dyn JobDriver>,
    retention: Retention,
}

impl std::fmt::Debug for FinishedJobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinishedJobs")
            .field("driver", &self.driver.name())
            .field("retention", &self.retention)
            .finish()
    }
}

impl FinishedJobs {
    /// The target over `driver`'s finished jobs, kept as `retention` says.
    pub fn new(driver: Arc<dyn JobDriver>, retention: Retention) -> Self {
        FinishedJobs { driver, retention }
    }
}

#[async_trait]
impl PurgeTarget for FinishedJobs {
    fn name(&self) -> &str {
        "jobs"
    }

    async fn purge_expired(&self, now: Timestamp) -> Result<u64, JobError> {
        let params = self.retention.params(now);
        let mut total = 0;
        loop {
            let gone = self.driver.job_purge(&params).await?;
            total += gone;
            // `limit` bounds each state group, so a full batch of either group can answer up
            // to twice it; only a batch below it proves both groups are worked off.
            if gone < u64::from(params.limit) {
                return Ok(total);
            }
        }
    }
}

/// The webhook ledger's attempts older than `keep` (`attempts_purge` on the driver's
/// [`WebhookLedger`](crate::driver::WebhookLedger)); every endpoint keeps its failure run and
/// its disabled flag. Named `webhook_attempts`.
pub struct WebhookAttempts {
    driver: Arc<dyn JobDriver>,
    keep: Duration,
    batch: u32,
}

impl std::fmt::Debug for WebhookAttempts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookAttempts")
            .field("driver", &self.driver.name())
            .field("keep", &self.keep)
            .field("batch", &self.batch)
            .finish()
    }
}

impl WebhookAttempts {
    /// The target over `driver`'s webhook ledger, keeping attempts younger than `keep`.
    pub fn new(driver: Arc<dyn JobDriver>, keep: Duration) -> Self {
        WebhookAttempts {
            driver,
            keep,
            batch: DEFAULT_WEBHOOK_ATTEMPT_PURGE_BATCH,
        }
    }

    /// Attempts per delete statement (at least 1).
    pub fn batch(mut self, attempts: u32) -> Self {
        self.batch = attempts.max(1);
        self
    }
}

#[async_trait]
impl PurgeTarget for WebhookAttempts {
    fn name(&self) -> &str {
        "webhook_attempts"
    }

    async fn purge_expired(&self, now: Timestamp) -> Result<u64, JobError> {
        let Some(ledger) = self.driver.webhook_ledger() else {
            return Err(JobError::new(
                ErrorCode::NotImplemented,
                format!(
                    "driver `{}` has no webhook ledger for the `webhook_attempts` purge target",
                    self.driver.name()
                ),
            )
            .with_fix("drop `.webhook_attempts(..)` from this purge, or use a driver that keeps a webhook ledger"));
        };
        let keep = chrono::Duration::from_std(self.keep).unwrap_or(chrono::Duration::MAX);
        let params = AttemptsPurgeParams {
            before: now.checked_sub_signed(keep).unwrap_or(Timestamp::MIN_UTC),
            limit: self.batch,
        };
        in_batches(self.batch, || ledger.attempts_purge(&params)).await
    }
}
