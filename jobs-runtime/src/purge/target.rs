//! [`PurgeTarget`]: one table (or store) the purge job keeps bounded.

use async_trait::async_trait;

use crate::clock::Timestamp;
use crate::error::JobError;

/// One thing the purge job deletes expired rows from: the events table, finished jobs, an
/// app's own table, a webhook ledger's old attempts.
///
/// A target owns what "expired" means for its rows; the purge job only hands it the pass's one
/// clock reading and records what it answered. A pass runs at least once, and a pass killed
/// inside a target runs that target again from the start, so `purge_expired` must be safe to
/// repeat: delete by a condition on `now` (`where expires_at <= $1`), never "the next N".
///
/// ```
/// use jobs::purge::PurgeTarget;
/// use jobs::clock::Timestamp;
/// use jobs::JobError;
///
/// /// Sessions idle for a day.
/// struct StaleSessions;
///
/// #[jobs::purge::async_trait]
/// impl PurgeTarget for StaleSessions {
///     fn name(&self) -> &str {
///         "sessions"
///     }
///     async fn purge_expired(&self, now: Timestamp) -> Result<u64, JobError> {
///         // delete from sessions where last_seen < $1 - interval '1 day' (in batches)
///         let _ = now;
///         Ok(0)
///     }
/// }
/// ```
#[async_trait]
pub trait PurgeTarget: Send + Sync {
    /// The target's name, unique within one purge declaration: it is the name of the durable
    /// step the target runs in, so a resumed pass knows which targets already ran.
    fn name(&self) -> &str;

    /// Deletes the rows expired at `now` (the pass's one clock reading); answers how many went.
    async fn purge_expired(&self, now: Timestamp) -> Result<u64, JobError>;
}
