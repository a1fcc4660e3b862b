//! The lease store: fleet-wide slots with fencing tokens. Job concurrency caps (`job:<name>`,
//! `job-key:<name>:<key>`) and `with_lock` (`lock:<key>`) all hold their slots here; there is no
//! other mechanism.
//!
//! A lease is one slot of a key, held by a holder until it expires unless renewed. Every grant
//! takes a fence number from one sequence: strictly increasing across holders and keys, kept by
//! the store, never a client clock. Acquire never over-grants; under contention it may refuse a
//! free slot, which costs the caller one poll.
//!
//! A grant that lapsed is a free slot, but its row stays until a release or a later grant of
//! the same slot replaces it; a rate limit's grants are never released (they lapse with their
//! window), so a keyed rate (`rate-key:<name>:<key>`) leaves rows for every key it ever saw.
//! Each acquire therefore also deletes up to [`LEASE_SWEEP_BATCH`] grants of other keys that
//! lapsed more than [`LEASE_SWEEP_AFTER`] before its `now`, oldest first: the rows stay bounded
//! by the grants of the last window and that margin, with no purge job to configure.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::error::JobError;

/// How long after it lapsed a grant's row is kept before an acquire of another key may delete
/// it. Until then a holder that renews late still finds its grant, unless another holder took
/// the slot over (a deleted grant answers a renewal as one taken over: `None`).
pub const LEASE_SWEEP_AFTER: Duration = Duration::from_secs(60);

/// Lapsed grants of other keys one acquire deletes at most: more than the one row an acquire
/// adds, so the sweep keeps pace with any rate of new keys.
pub const LEASE_SWEEP_BATCH: u32 = 16;

/// The cutoff an acquire at `now` sweeps below: grants that lapsed at or before it go.
pub fn lease_sweep_before(now: Timestamp) -> Timestamp {
    now - chrono::Duration::from_std(LEASE_SWEEP_AFTER).unwrap_or_default()
}

/// A granted slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldLease {
    /// The lease key, e.g. `job:sync` or `lock:nightly-report`.
    pub key: String,
    /// The slot, from 0 to `limit - 1`.
    pub slot: u32,
    /// Who holds it.
    pub holder: String,
    /// The fencing token of this grant.
    pub fence: i64,
    /// When it lapses without a renewal.
    pub expires_at: Timestamp,
}

/// Asks for one of `limit` slots of `key`.
#[derive(Debug, Clone)]
pub struct LeaseAcquire {
    /// The lease key.
    pub key: String,
    /// Slots the key has.
    pub limit: u32,
    /// How long the grant lasts without a renewal.
    pub ttl: Duration,
    /// Who asks.
    pub holder: String,
    /// The clock's now.
    pub now: Timestamp,
}

/// The lease store port. Drivers offer it through
/// [`JobDriver::lease_store`](super::JobDriver::lease_store).
#[async_trait]
pub trait LeaseStore: Send + Sync {
    /// Grants a free (never held, or lapsed) slot, or answers `None` when every slot is held
    /// (or the free one was taken under contention). Also deletes up to [`LEASE_SWEEP_BATCH`]
    /// grants of other keys that lapsed at or before [`lease_sweep_before`]`(now)`, so the
    /// rows of keys no longer used do not pile up (a driver that expires them another way may
    /// skip it).
    async fn lease_acquire(&self, params: &LeaseAcquire) -> Result<Option<HeldLease>, JobError>;

    /// Extends a grant to `now + ttl` and answers it renewed. `None`: the grant is gone
    /// (released, or lapsed and granted to another holder); stop relying on it.
    async fn lease_renew(
        &self,
        params: &LeaseRenewParams<'_>,
    ) -> Result<Option<HeldLease>, JobError>;

    /// Gives a grant back; only its own holder's grant goes. `false`: it was already gone.
    async fn lease_release(&self, lease: &HeldLease) -> Result<bool, JobError>;

    /// The live holders of `key`, in slot order.
    async fn lease_holders(
        &self,
        params: &LeaseHoldersParams<'_>,
    ) -> Result<Vec<HeldLease>, JobError>;
}

/// Extend a grant.
#[derive(Debug, Clone, Copy)]
pub struct LeaseRenewParams<'a> {
    /// The grant.
    pub lease: &'a HeldLease,
    /// How long the grant holds from now.
    pub ttl: Duration,
    /// Now, on the injected clock.
    pub now: Timestamp,
}

/// List the live holders of a key.
#[derive(Debug, Clone, Copy)]
pub struct LeaseHoldersParams<'a> {
    /// The key.
    pub key: &'a str,
    /// Now, on the injected clock.
    pub now: Timestamp,
}
