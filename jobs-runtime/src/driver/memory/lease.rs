//! The in-memory lease store: the same rules as the Postgres table, in one process. Grants that
//! lapsed more than [`LEASE_SWEEP_AFTER`](crate::driver::lease::LEASE_SWEEP_AFTER) ago are
//! dropped by a sweep of the whole map once per as many acquires as the last sweep left grants
//! (at least [`SWEEP_EVERY`]), which costs an acquire O(1) on average and keeps the map bounded.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::clock::add;
use crate::driver::lease::{lease_sweep_before, HeldLease, LeaseAcquire, LeaseStore};
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
    /// Acquires since the last sweep of lapsed grants.
    since_sweep: usize,
    /// How many grants the last sweep left.
    after_sweep: usize,
}

/// The fewest acquires between two sweeps of the grants.
pub const SWEEP_EVERY: usize = 64;

impl LeaseState {
    /// Drops the grants that lapsed at or before the sweep cutoff of `now`, once per as many
    /// acquires as the last sweep left grants (at least [`SWEEP_EVERY`]): a sweep's cost is
    /// paid by as many acquires as it walks, and the map holds at most twice what the last
    /// sweep left, plus [`SWEEP_EVERY`].
    fn sweep(&mut self, now: crate::clock::Timestamp) {
        self.since_sweep += 1;
        if self.since_sweep < self.after_sweep.max(SWEEP_EVERY) {
            return;
        }
        self.since_sweep = 0;
        let before = lease_sweep_before(now);
        self.leases.retain(|_, held| held.expires_at > before);
        self.after_sweep = self.leases.len();
    }

    /// How many grants are stored, lapsed or not.
    #[cfg(test)]
    fn stored(&self) -> usize {
        self.leases.len()
    }
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
        state.sweep(p.now);
        let free = (0..p.limit).find(|slot| {
            state
                .leases
                .get(&(p.key.clone(), *slot))
                .is_none_or(|held| held.expires_at <= p.now)
        });
        let Some(slot) = free.or_else(|| planted!(LeaseOverCapacity).then_some(p.limit)) else {
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::driver::lease::LEASE_SWEEP_AFTER;

    /// A keyed rate's grants, one key each second (a window of 1 s): the lapsed ones go, so the
    /// map holds about the grants of the sweep margin, however many keys came.
    #[tokio::test]
    async fn lapsed_grants_of_many_keys_do_not_pile_up() {
        let store = MemoryLeaseStore::new();
        let start = chrono::Utc::now();
        let keys = 5_000;
        for n in 0..keys {
            let granted = store
                .lease_acquire(&LeaseAcquire {
                    key: format!("rate-key:sync:{n}"),
                    limit: 1,
                    ttl: Duration::from_secs(1),
                    holder: "w1".into(),
                    now: start + chrono::Duration::seconds(n),
                })
                .await
                .unwrap();
            assert!(granted.is_some());
        }
        let stored = store.lock().stored();
        let margin = LEASE_SWEEP_AFTER.as_secs() as usize;
        assert!(
            stored <= 2 * (margin + SWEEP_EVERY),
            "{stored} grants stored after {keys} keys"
        );
    }
}
