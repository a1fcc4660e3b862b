//! [`OutboxPurge`]: the purge target that keeps the outbox's audit trail bounded.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::driver::outbox::OutboxStore;
use crate::error::JobError;
use crate::purge::PurgeTarget;

/// Rows one delete removes at most; the target repeats until a delete comes back short.
const PURGE_BATCH: u32 = 1_000;

/// Deletes outbox rows published (or refused) longer ago than `keep`: a
/// [`PurgeTarget`] for a `#[purge]` declaration's targets.
///
/// ```
/// use std::time::Duration;
/// use jobs::driver::MemoryOutbox;
/// use jobs::outbox::OutboxPurge;
///
/// let target = OutboxPurge::new(MemoryOutbox::new(), Duration::from_secs(7 * 86_400));
/// # let _ = target;
/// ```
#[derive(Debug, Clone)]
pub struct OutboxPurge {
    store: Arc<dyn OutboxStore>,
    keep: Duration,
}

impl OutboxPurge {
    /// Purges `store`'s settled rows older than `keep`.
    pub fn new(store: impl OutboxStore, keep: Duration) -> Self {
        Self::shared(Arc::new(store), keep)
    }

    /// [`OutboxPurge::new`] over a shared store.
    pub fn shared(store: Arc<dyn OutboxStore>, keep: Duration) -> Self {
        OutboxPurge { store, keep }
    }
}

#[async_trait]
impl PurgeTarget for OutboxPurge {
    fn name(&self) -> &str {
        "outbox"
    }

    async fn purge_expired(&self, now: Timestamp) -> Result<u64, JobError> {
        let before = crate::clock::sub(now, self.keep);
        let mut total = 0;
        loop {
            let gone = self.store.outbox_purge(before, PURGE_BATCH).await?;
            total += gone;
            if gone < u64::from(PURGE_BATCH) {
                return Ok(total);
            }
        }
    }
}
