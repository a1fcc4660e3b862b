//! The lease store (`lua/lease.lua`) in one slot of its own, `{<prefix>:lease}`: the port
//! promises one fence sequence across every lease key, so the sequence and every key's grants
//! share that slot and each acquire draws its fence in the script that takes the slot. A tag
//! per lease key would spread keys over a cluster's masters but split the sequence, and no
//! fence from two counters can be ordered.
//!
//! An acquire is one script: it reads the key's grants, takes the lowest free slot and draws
//! the fence, so concurrent acquirers are served one after another by the server and no slot
//! is granted twice. Renew and release are fenced on the grant's own fence; the holders are
//! one `HGETALL`. A zset keeps each lease key by its grants' latest expiry, so an acquire
//! deletes a few keys whose grants all lapsed long before (a keyed rate's, used once).

use std::collections::HashMap;

use async_trait::async_trait;

use super::codec::{micros, time};
use super::enqueue::malformed;
use super::scripts;
use super::RedisDriver;
use crate::clock::add;
use crate::driver::lease::{
    lease_sweep_before, HeldLease, LeaseAcquire, LeaseStore, LEASE_SWEEP_BATCH,
};
use crate::driver::lease::{LeaseHoldersParams, LeaseRenewParams};
use crate::driver::Operation as Op;
use crate::error::JobError;

impl RedisDriver {
    /// The hash of `key`'s grants, slot -> `<fence>:<expires_at>:<holder>`.
    fn lease_grants(&self, key: &str) -> String {
        format!("{}:l:{key}", self.keys().area("lease"))
    }
}

/// A stored grant of `key`'s `slot` back.
fn grant(key: &str, slot: &str, stored: &str) -> Result<HeldLease, JobError> {
    let mut parts = stored.splitn(3, ':');
    let (Some(fence), Some(expires), Some(holder)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed());
    };
    Ok(HeldLease {
        key: key.to_string(),
        slot: slot.parse().map_err(|_| malformed())?,
        holder: holder.to_string(),
        fence: fence.parse().map_err(|_| malformed())?,
        expires_at: time(expires)?,
    })
}

#[async_trait]
impl LeaseStore for RedisDriver {
    async fn lease_acquire(&self, p: &LeaseAcquire) -> Result<Option<HeldLease>, JobError> {
        let expires_at = add(p.now, p.ttl);
        let mut invocation = scripts::LEASE.key(self.keys().area("lease"));
        invocation
            .arg("acquire")
            .arg(&p.key)
            .arg(p.limit)
            .arg(&p.holder)
            .arg(micros(p.now))
            .arg(micros(expires_at))
            .arg(micros(lease_sweep_before(p.now)))
            .arg(LEASE_SWEEP_BATCH);
        let answer: Vec<String> = self.conn().script(Op::LeaseAcquire, &invocation).await?;
        let [slot, fence] = match <[String; 2]>::try_from(answer) {
            Ok(pair) => pair,
            Err(empty) if empty.is_empty() => return Ok(None),
            Err(_) => return Err(malformed()),
        };
        Ok(Some(HeldLease {
            key: p.key.clone(),
            slot: slot.parse().map_err(|_| malformed())?,
            holder: p.holder.clone(),
            fence: fence.parse().map_err(|_| malformed())?,
            expires_at,
        }))
    }

    async fn lease_renew(
        &self,
        params: &LeaseRenewParams<'_>,
    ) -> Result<Option<HeldLease>, JobError> {
        let LeaseRenewParams { lease, ttl, now } = *params;
        let expires_at = add(now, ttl);
        let mut invocation = scripts::LEASE.key(self.keys().area("lease"));
        invocation
            .arg("renew")
            .arg(&lease.key)
            .arg(lease.slot)
            .arg(lease.fence)
            .arg(micros(expires_at));
        let renewed: i64 = self.conn().script(Op::LeaseRenew, &invocation).await?;
        // The fence names one grant: its holder and slot are the lease's own.
        Ok((renewed == 1).then(|| HeldLease {
            expires_at,
            ..lease.clone()
        }))
    }

    async fn lease_release(&self, lease: &HeldLease) -> Result<bool, JobError> {
        let mut invocation = scripts::LEASE.key(self.keys().area("lease"));
        invocation
            .arg("release")
            .arg(&lease.key)
            .arg(lease.slot)
            .arg(lease.fence);
        let released: i64 = self.conn().script(Op::LeaseRelease, &invocation).await?;
        Ok(released == 1)
    }

    async fn lease_holders(
        &self,
        params: &LeaseHoldersParams<'_>,
    ) -> Result<Vec<HeldLease>, JobError> {
        let LeaseHoldersParams { key, now } = *params;
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(self.lease_grants(key));
        let stored: HashMap<String, String> = self.conn().query(Op::LeaseHolders, &cmd).await?;
        let mut held = stored
            .iter()
            .map(|(slot, stored)| grant(key, slot, stored))
            .collect::<Result<Vec<_>, _>>()?;
        held.retain(|g| g.expires_at > now);
        held.sort_by_key(|g| g.slot);
        Ok(held)
    }
}
