//! The in-memory lease store: the same rules as the Postgres table, in one process.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::clock::add;
use crate::driver::lease::{HeldLease, LeaseAcquire, LeaseStore};
use crate::driver::lease::{LeaseHoldersParams, LeaseRenewParams};
use crate::error::JobError;

/// The in-memory [`LeaseStore`].
#[derive(Debug, Default)]
pub struct MemoryLeaseStore {
    state: Mutex<LeaseState>,
}

#[derive(Debug, Default)]
struct LeaseState {
    /// `(key, slot)` -> the grant.
    leases: BTreeMap<(String, u32), HeldLease>,
    /// The one fence sequence.
    fence: i64,
}

impl MemoryLeaseStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LeaseState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl LeaseStore for MemoryLeaseStore {
    async fn lease_acquire(&self, p: &LeaseAcquire) -> Result<Option<HeldLease>, JobError> {
        let mut state = self.lock();
        let free = (0..p.limit).find(|slot| {
            state
                .leases
                .get(&(p.key.clone(), *slot))
                .is_none_or(|held| held.expires_at <= p.now)
        });
        let Some(slot) = free else {
            return Ok(None);
        };
        state.fence += 1;
        let lease = HeldLease {
            key: p.key.clone(),
            slot,
            holder: p.holder.clone(),
            fence: state.fence,
            expires_at: add(p.now, p.ttl),
        };
        state.leases.insert((p.key.clone(), slot), lease.clone());
        Ok(Some(lease))
    }

    async fn lease_renew(
        &self,
        params: &LeaseRenewParams<'_>,
    ) -> Result<Option<HeldLease>, JobError> {
        let LeaseRenewParams { lease, ttl, now } = *params;
        let mut state = self.lock();
        match state.leases.get_mut(&(lease.key.clone(), lease.slot)) {
            Some(held) if held.fence == lease.fence => {
                held.expires_at = add(now, ttl);
                Ok(Some(held.clone()))
            }
            _ => Ok(None),
        }
    }

    async fn lease_release(&self, lease: &HeldLease) -> Result<bool, JobError> {
        let mut state = self.lock();
        let slot = (lease.key.clone(), lease.slot);
        if state
            .leases
            .get(&slot)
            .is_some_and(|h| h.fence == lease.fence)
        {
            state.leases.remove(&slot);
            return Ok(true);
        }
        Ok(false)
    }

    async fn lease_holders(
        &self,
        params: &LeaseHoldersParams<'_>,
    ) -> Result<Vec<HeldLease>, JobError> {
        let LeaseHoldersParams { key, now } = *params;
        let state = self.lock();
        Ok(state
            .leases
            .range((key.to_string(), 0)..=(key.to_string(), u32::MAX))
            .map(|(_, held)| held)
            .filter(|held| held.expires_at > now)
            .cloned()
            .collect())
    }
}
