//! The lease store: fleet-wide slots with fencing tokens. Job concurrency caps (`job:<name>`,
//! `job-key:<name>:<key>`) and `with_lock` (`lock:<key>`) all hold their slots here; there is no
//! other mechanism.
//!
//! A lease is one slot of a key, held by a holder until it expires unless renewed. Every grant
//! takes a fence number from one sequence: strictly increasing across holders and keys, kept by
//! the store, never a client clock. Acquire never over-grants; under contention it may refuse a
//! free slot, which costs the caller one poll.

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::error::JobError;

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
    /// (or the free one was taken under contention).
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
