//! The fleet-wide slots, held in the driver's lease store. For the run: the job's
//! `#[job(concurrency = ..)]` cap (`job:<name>`, or `job-key:<name>:<key>` per key) and its
//! queue's cap ([`QueueLimits`](super::QueueLimits), `queue:<queue>`); admission takes them,
//! the keeper renews them with the claim's heartbeat (same TTL), and the settle stage gives
//! them back once the run's ending is written. For the start: the job's `#[job(rate(..))]`
//! (`rate:<name>`, or `rate-key:<name>:<key>` per key) and its queue's rate
//! (`rate-queue:<queue>`): one of `limit` slots with a TTL of the window, taken last and never
//! given back, so no window holds more than `limit` grants.

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
    /// Over a cap or a rate (which), handed back until the moment given (a rate's window
    /// frees a slot then), or after the shed delay.
    Shed(&'static str, Option<Timestamp>),
    Busy(JobError),
    Undecidable(JobError),
}

/// The keys a run derived from its input, for its keyed cap and its keyed rate.
#[derive(Default)]
pub(super) struct RunKeys {
    /// `concurrency(key = ..)`'s key.
    pub concurrency: Option<String>,
    /// `rate(key = ..)`'s key.
    pub rate: Option<String>,
}

/// Whether a claim of `entry` on `queue` needs anything of the lease store.
pub(super) fn needed(shared: &WorkerShared, entry: &JobEntry, queue: &str) -> bool {
    let d = entry.descriptor();
    d.concurrency.is_some() || d.rate.is_some() || shared.queue_limits.contains_key(queue)
}

/// Takes what a run needs of the lease store, in order: the job's cap, the queue's cap, then
/// the job's rate and the queue's rate, last, so a run turned away by a cap spends no start.
/// Answers the slots held for the run (a rate grant is not held: it lapses with its window).
/// When one is refused, every slot and grant taken before it is given back: a run turned
/// away holds nothing and has spent no start (a release that fails leaves a grant to lapse,
/// which errs on the side of fewer starts).
pub(super) async fn take(
    shared: &WorkerShared,
    entry: &JobEntry,
    job: &ClaimedJob,
    keys: RunKeys,
    now: Timestamp,
) -> Result<Vec<HeldLease>, Denied> {
    let descriptor = entry.descriptor();
    let Some(store) = shared.jobs.driver().lease_store() else {
        // The worker refuses to start in this case; never run a capped job uncapped.
        return Err(Denied::Undecidable(JobError::new(
            ErrorCode::JobConcurrencyUnenforceable,
            format!(
                "job `{}` declares concurrency or rate, or its queue has fleet-wide limits, and the driver has no lease store",
                descriptor.name
            ),
        )));
    };
    let mut taken = Taken {
        store,
        held: Vec::new(),
        spent: Vec::new(),
    };
    match taken.all(shared, entry, job, keys, now).await {
        Ok(()) => Ok(taken.held),
        Err(denied) => {
            taken.give_back().await;
            Err(denied)
        }
    }
}

/// What one admission took so far.
struct Taken<'a> {
    store: &'a dyn LeaseStore,
    /// Held for the run, renewed and released with it.
    held: Vec<HeldLease>,
    /// Rate grants: spent by the start, unless admission turns the run away.
    spent: Vec<HeldLease>,
}

impl Taken<'_> {
    async fn all(
        &mut self,
        shared: &WorkerShared,
        entry: &JobEntry,
        job: &ClaimedJob,
        keys: RunKeys,
        now: Timestamp,
    ) -> Result<(), Denied> {
        let descriptor = entry.descriptor();
        let name = descriptor.name;
        let queue = shared.queue_limits.get(&*job.queue);
        let asked = |key: String, limit: u32, ttl: Duration| LeaseAcquire {
            key,
            limit,
            ttl,
            holder: holder(&shared.id, job),
            now,
        };
        let ttl = shared.visibility_timeout;
        if let Some(cap) = descriptor.concurrency {
            let key = lease_key(
                ("job", "job-key", "concurrency"),
                name,
                cap.keyed,
                keys.concurrency,
            )?;
            match self.acquire(&asked(key.clone(), cap.limit, ttl)).await? {
                Some(lease) => self.held.push(lease),
                None if cap.keyed && cap.when_busy == WhenBusy::Fail => {
                    return Err(refuse_on_evidence(self.store, &key, job, now, name).await)
                }
                None => return Err(Denied::Shed("concurrency", None)),
            }
        }
        if let Some(cap) = queue.and_then(|q| q.concurrency_limit()) {
            let key = format!("queue:{}", job.queue);
            match self.acquire(&asked(key, cap, ttl)).await? {
                Some(lease) => self.held.push(lease),
                None => return Err(Denied::Shed("queue-concurrency", None)),
            }
        }
        if let Some(rate) = descriptor.rate {
            let key = lease_key(("rate", "rate-key", "rate"), name, rate.keyed, keys.rate)?;
            self.start(asked(key, rate.limit, rate.per), "rate").await?;
        }
        if let Some((limit, per)) = queue.and_then(|q| q.rate_limit()) {
            let key = format!("rate-queue:{}", job.queue);
            self.start(asked(key, limit, per), "queue-rate").await?;
        }
        Ok(())
    }

    async fn acquire(&self, asked: &LeaseAcquire) -> Result<Option<HeldLease>, Denied> {
        self.store
            .lease_acquire(asked)
            .await
            .map_err(Denied::Undecidable)
    }

    /// Takes a start from a rate: one of its `limit` slots for its window. Over the limit,
    /// the run is due again when the earliest grant lapses (at once if the store refused a
    /// free slot under contention).
    async fn start(&mut self, asked: LeaseAcquire, limit: &'static str) -> Result<(), Denied> {
        if let Some(grant) = self.acquire(&asked).await? {
            self.spent.push(grant);
            return Ok(());
        }
        let holders = self
            .store
            .lease_holders(&LeaseHoldersParams {
                key: &asked.key,
                now: asked.now,
            })
            .await;
        // Every slot taken: due when the earliest lapses. A slot free (the store refused it
        // under contention): due at once, for the next claim. Not known (the read failed):
        // after the shed delay, as a cap's shed.
        let Ok(holders) = holders else {
            return Err(Denied::Shed(limit, None));
        };
        let free_at = if holders.len() >= asked.limit as usize {
            holders.iter().map(|grant| grant.expires_at).min()
        } else {
            None
        };
        Err(Denied::Shed(limit, Some(free_at.unwrap_or(asked.now))))
    }

    /// Gives back everything taken, for a run that does not start.
    async fn give_back(self) {
        for lease in self.held.iter().chain(&self.spent) {
            release_one(self.store, lease).await;
        }
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
) -> Denied {
    match store.lease_holders(&LeaseHoldersParams { key, now }).await {
        Ok(holders) if holders.iter().any(|h| !held_by_job(&h.holder, job)) => {
            Denied::Busy(JobError::new(
                ErrorCode::JobKeyBusy,
                format!(
                    "job `{name}` is declared when_busy = fail and its concurrency key is busy"
                ),
            ))
        }
        Ok(_) => Denied::Shed("own-claim", None),
        Err(error) => Denied::Undecidable(error),
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

/// The lease key of a job's cap or rate: `<plain>:<name>` (`job`, `rate`), or, keyed, the run's
/// key under `<keyed>` (`job-key`, `rate-key`); a keyed one whose key did not derive is
/// undecidable (`what` names it: `concurrency`, `rate`).
fn lease_key(
    (plain, keyed_kind, what): (&str, &str, &str),
    name: &str,
    keyed: bool,
    key: Option<String>,
) -> Result<String, Denied> {
    match (keyed, key) {
        (true, Some(key)) => Ok(keyed_lease_key(keyed_kind, name, &key)),
        (true, None) => Err(Denied::Undecidable(JobError::new(
            ErrorCode::JobDeclarationInvalid,
            format!("job `{name}` derived no {what} key"),
        ))),
        (false, _) => Ok(format!("{plain}:{name}")),
    }
}

/// `<kind>:<name>:<key>` (`job-key`, `rate-key`), with `%` and `:` in the name escaped so no
/// two jobs share a key.
fn keyed_lease_key(kind: &str, name: &str, key: &str) -> String {
    let name = name.replace('%', "%25").replace(':', "%3A");
    format!("{kind}:{name}:{key}")
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
            release_one(store, lease).await;
        }
    }
}

async fn release_one(store: &dyn LeaseStore, lease: &HeldLease) {
    if let Err(error) = store.lease_release(lease).await {
        // The slot frees itself when its TTL passes.
        // The kind of slot only (`job-key`, `rate-key`...): a keyed slot's key is app data.
        tracing::warn!(
            target: "jobs.worker.slot-unreleased",
            kind = lease.key.split(':').next().unwrap_or_default(),
            code = error.code().map(|c| c.as_str()),
            "a fleet slot could not be released; it lapses with its TTL"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_lease_keys_cannot_collide_across_names() {
        for kind in ["job-key", "rate-key"] {
            assert_ne!(
                keyed_lease_key(kind, "a:b", "c"),
                keyed_lease_key(kind, "a", "b:c")
            );
        }
        assert_eq!(
            keyed_lease_key("job-key", "sync", "acct-1"),
            "job-key:sync:acct-1"
        );
        assert_eq!(
            keyed_lease_key("rate-key", "sync", "acct-1"),
            "rate-key:sync:acct-1"
        );
    }
}
