//! The built-in targets: expired events, and finished jobs past their retention windows with
//! the steps of their runs. Each deletes in bounded batches until a batch comes back short, so
//! no statement holds many locks or runs long.

use std::sync::Arc;

use async_trait::async_trait;

use super::PurgeTarget;
use crate::clock::Timestamp;
use crate::driver::{EventPurgeParams, JobDriver};
use crate::error::JobError;
use crate::maintenance::Retention;

/// Events per delete statement unless set with [`ExpiredEvents::batch`].
pub const DEFAULT_EVENT_PURGE_BATCH: u32 = 5_000;

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
        let mut total = 0;
        loop {
            let gone = self.driver.event_purge(&params).await?;
            total += gone;
            if gone < u64::from(self.batch) {
                return Ok(total);
            }
        }
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
