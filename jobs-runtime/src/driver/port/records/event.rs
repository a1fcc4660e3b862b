//! Events: publishing one, the stored event a wait takes, the line a wait draws, finding the
//! first match, and purging expired ones.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;

use super::EventId;

/// An event to store.
#[derive(Debug, Clone)]
pub struct EventPublish {
    /// The event's id.
    pub id: EventId,
    /// The event name, e.g. `invoice.paid`.
    pub name: String,
    /// The correlation key a wait matches on.
    pub key: String,
    /// The payload.
    pub payload: serde_json::Value,
    /// How long the event stays matchable.
    pub ttl: Duration,
    /// The clock's now.
    pub now: Timestamp,
}

/// Deletes expired events, in one bounded batch.
#[derive(Debug, Clone)]
pub struct EventPurgeParams {
    /// Events whose expiry is at or before this go (an expired event no wait can match).
    pub now: Timestamp,
    /// Events in this batch, at most.
    pub limit: u32,
}

/// The default time an event stays matchable: 7 days.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// A stored event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobEvent {
    /// Its id.
    pub id: EventId,
    /// Name.
    pub name: String,
    /// Correlation key.
    pub key: String,
    /// Payload.
    pub payload: serde_json::Value,
    /// When it was stored.
    pub published_at: Timestamp,
}

/// The line a wait draws: only events stored after it match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventSince {
    /// When the wait began.
    pub at: Timestamp,
    /// The driver's mark when the wait began: which events the wait could already see (a
    /// sequence number in memory, a transaction snapshot in Postgres).
    pub mark: String,
}

/// Find the first event a wait may take.
#[derive(Debug, Clone, Copy)]
pub struct EventFindParams<'a> {
    /// The name.
    pub name: &'a str,
    /// The key.
    pub key: &'a str,
    /// From when.
    pub since: &'a EventSince,
    /// Now, on the injected clock.
    pub now: Timestamp,
}
