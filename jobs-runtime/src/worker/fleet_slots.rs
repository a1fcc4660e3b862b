//! The fleet-wide slots of `#[job(concurrency = ..)]`, held in the driver's lease store:
//! `job:<name>` for a plain cap, `job-key:<name>:<key>` per key. Admission takes them, the
//! keeper renews them with the claim's heartbeat (same TTL), and the settle stage gives them
//! back once the run's ending is written.

use std::time::Duration;

use super::WorkerShared;
use crate::clock::Timestamp;
use crate::descriptor::WhenBusy;
use crate::driver::lease::{
    HeldLease, LeaseAcquire, LeaseHoldersParams, LeaseRenewParams, LeaseStore,
};
use crate::driver::ClaimedJob;
use crate::error::{ErrorCode, JobError};
use crate::registry::JobEntry;

/// Why no fleet slot was taken.
pub(super) enum Denied {
    Shed(&'static str),
    Busy(JobError),
    Undecidable(JobError),
}

/// Takes the fleet slot a capped job needs, under `key` for a keyed cap. A fleet slot lives as
/// long as the claim: the same TTL, renewed by the same heartbeat.
pub(super) async fn take(
    shared: &WorkerShared,
    entry: &JobEntry,
    job: &ClaimedJob,
    key: Option<String>,
    now: Timestamp,
) -> Result<Vec<HeldLease>, Denied> {
    let descriptor = entry.descriptor();
    let Some(cap) = descriptor.concurrency else {
        return Ok(Vec::new());
    };
    let Some(store) = shared.jobs.driver().lease_store() else {
        // The worker refuses to start in this case; never run a capped job uncapped.
        return Err(Denied::Undecidable(JobError::new(
            ErrorCode::JobConcurrencyUnenforceable,
            format!(
                "job `{}` declares concurrency and the driver has no lease store",
                descriptor.name
            ),
        )));
    };
    let key = match (cap.keyed, key) {
        (true, Some(key)) => keyed_lease_key(descriptor.name, &key),
        (true, None) => {
            return Err(Denied::Undecidable(JobError::new(
                ErrorCode::JobDeclarationInvalid,
                format!("job `{}` derived no concurrency key", descriptor.name),
            )))
        }
        (false, _) => format!("job:{}", descriptor.name),
    };
    let asked = LeaseAcquire {
        key: key.clone(),
        limit: cap.limit,
        ttl: shared.visibility_timeout,
        holder: holder(&shared.id, job),
        now,
    };
    match store.lease_acquire(&asked).await {
        Ok(Some(lease)) => Ok(vec![lease]),
        Ok(None) if cap.keyed && cap.when_busy == WhenBusy::Fail => {
            refuse_on_evidence(store, &key, job, now, descriptor.name).await
        }
        Ok(None) => Err(Denied::Shed("concurrency")),
        Err(error) => Err(Denied::Undecidable(error)),
    }
}

/// `when_busy = fail` refuses only on evidence that ANOTHER run holds the key: if the only
/// holders are this job's own earlier claims, or the key is free a moment later, it waits one
/// poll instead.
async fn refuse_on_evidence(
    store: &dyn LeaseStore,
    key: &str,
    job: &ClaimedJob,
    now: Timestamp,
    name: &str,
) -> Result<Vec<HeldLease>, Denied> {
    match store.lease_holders(&LeaseHoldersParams { key, now }).await {
        Ok(holders) if holders.iter().any(|h| !held_by_job(&h.holder, job)) => {
            Err(Denied::Busy(JobError::new(
                ErrorCode::JobKeyBusy,
                format!(
                    "job `{name}` is declared when_busy = fail and its concurrency key is busy"
                ),
            )))
        }
        Ok(_) => Err(Denied::Shed("own-claim")),
        Err(error) => Err(Denied::Undecidable(error)),
    }
}

/// Who holds a fleet slot: this claim of this job on this worker.
fn holder(worker: &str, job: &ClaimedJob) -> String {
    format!("{worker}|{}|{}", job.id, job.by.claim)
}

/// A holder string names `job` (any claim of it).
fn held_by_job(holder: &str, job: &ClaimedJob) -> bool {
    holder.split('|').nth(1) == Some(job.id.to_string().as_str())
}

/// `job-key:<name>:<key>`, with `%` and `:` in the name escaped so no two jobs share a key.
fn keyed_lease_key(name: &str, key: &str) -> String {
    let name = name.replace('%', "%25").replace(':', "%3A");
    format!("job-key:{name}:{key}")
}

/// Renews every held slot to `now + ttl`; `false` when one is gone (the run must stop:
/// `X_JOB_SLOT_LOST`).
pub(super) async fn renew(
    store: Option<&dyn LeaseStore>,
    held: &mut [HeldLease],
    ttl: Duration,
    now: Timestamp,
) -> Result<bool, JobError> {
    let Some(store) = store else {
        return Ok(true);
    };
    for lease in held.iter_mut() {
        match store
            .lease_renew(&LeaseRenewParams { lease, ttl, now })
            .await?
        {
            Some(renewed) => *lease = renewed,
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// Gives back the fleet slots a run held.
pub(super) async fn release(shared: &WorkerShared, held: &[HeldLease]) {
    if let Some(store) = shared.jobs.driver().lease_store() {
        for lease in held {
            if let Err(error) = store.lease_release(lease).await {
                // The slot frees itself when its TTL passes.
                tracing::warn!(
                    target: "jobs.worker.slot-unreleased",
                    key = %lease.key,
                    code = error.code().map(|c| c.as_str()),
                    "a fleet slot could not be released; it lapses with its TTL"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_lease_keys_cannot_collide_across_names() {
        assert_ne!(keyed_lease_key("a:b", "c"), keyed_lease_key("a", "b:c"));
        assert_eq!(keyed_lease_key("sync", "acct-1"), "job-key:sync:acct-1");
    }
}
