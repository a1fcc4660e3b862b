//! Stage 2, admit: whether a claimed job may start here and now.
//!
//! First the registry (no code for the name here: hand it back), then two layers, as in the
//! reference. The per-process limits ([`Limits`](super::Limits)) count this worker's own runs.
//! The fleet-wide caps (`#[job(concurrency = ..)]`) hold slots in the driver's lease store:
//! `job:<name>` for a plain cap, `job-key:<name>:<key>` per key. Over any cap the claim is
//! handed back without spending an attempt (a shed); `when_busy = fail` is the one refusal.
//!
//! The stored input is parsed here, once for the whole attempt: the typed body, the run's
//! tenant and the concurrency key all come out of that one parse.

use std::sync::Arc;
use std::time::Duration;

use super::claim::Claimed;
use super::WorkerShared;
use crate::clock::Timestamp;
use crate::descriptor::WhenBusy;
use crate::driver::lease::{HeldLease, LeaseAcquire, LeaseStore};
use crate::driver::lease::{LeaseHoldersParams, LeaseRenewParams};
use crate::driver::ClaimedJob;
use crate::error::{ErrorCode, JobError};
use crate::registry::{ErasedBody, JobEntry, ParsedInput, Typed};

/// What admission decided.
pub(crate) enum Admission {
    /// Start it.
    Admitted(Admitted),
    /// Do not start it; the settle stage writes why.
    Refused(Refused),
}

/// A claim that may start: its job, its typed body, and what admission holds for it.
pub(crate) struct Admitted {
    /// The claim and its slot.
    pub claimed: Claimed,
    /// The declared job it runs as, and the run's tenant.
    pub declared: Declared,
    /// The body over the typed input, or why the payload no longer parses (the attempt then
    /// fails as the body would).
    pub body: Result<ErasedBody, JobError>,
    /// The fleet slots held for it until it settles (it also holds a per-process place).
    pub held: Vec<HeldLease>,
    /// When admission read the clock: the attempt's claim window starts here (a moment
    /// early, so on the safe side), and the attempt reads the clock once less.
    pub at: Timestamp,
}

/// A claim that does not start, and why.
pub(crate) struct Refused {
    /// The claim and its slot.
    pub claimed: Claimed,
    /// Why it does not start.
    pub refusal: Refusal,
}

/// The declared job a claim runs as, and the run's tenant (what `on_settled` is told).
pub(crate) struct Declared {
    /// The registry's entry.
    pub entry: Arc<JobEntry>,
    /// The run's tenant, from the one parse of the input.
    pub tenant: Option<String>,
}

/// Why a claim does not start.
pub(crate) enum Refusal {
    /// No job of that name is registered in this worker: hand it back uncounted.
    Unknown,
    /// Over a per-process limit or a fleet cap (the name of which): hand it back uncounted.
    Shed(&'static str),
    /// `when_busy = fail` and the key is busy: settle `failed`, outcome `refused`.
    Busy(Declared, JobError),
    /// The cap could not be decided (the key did not derive): fail this attempt.
    Undecidable(Declared, JobError),
}

/// Decides whether the claimed job may start: the registry, then the per-process limits
/// (cheap, in memory), then the one parse of its input, then the fleet slots. A place or a
/// slot taken for a run that does not start is given back at once.
pub(crate) async fn admit(shared: &WorkerShared, claimed: Claimed) -> Admission {
    match admit_here(shared, claimed) {
        Here::Decided(admission) => admission,
        // Boxed: only a capped job waits on the lease store, and every attempt's future
        // carried (and moved) what that wait holds.
        Here::Capped(capped) => {
            let taking = Box::pin(admit_capped(shared, capped));
            taking.await
        }
    }
}

/// What admission decides in process, before any fleet slot.
enum Here {
    Decided(Admission),
    /// A capped job, admitted here, that still needs its fleet slot.
    Capped(Capped),
}

struct Capped {
    claimed: Claimed,
    declared: Declared,
    body: Result<ErasedBody, JobError>,
    key: Option<String>,
    now: Timestamp,
}

/// The registry, the per-process limits and the parse.
fn admit_here(shared: &WorkerShared, claimed: Claimed) -> Here {
    let Some(entry) = shared.registry.get_shared(&claimed.job.name) else {
        return Here::Decided(Admission::Refused(Refused {
            claimed,
            refusal: Refusal::Unknown,
        }));
    };
    let now = shared.jobs.now();
    if let Err(limit) = shared.limiter.enter(&shared.limits, &claimed.job, now) {
        return Here::Decided(Admission::Refused(Refused {
            claimed,
            refusal: Refusal::Shed(limit),
        }));
    }
    let job = &claimed.job;
    let ParsedInput { tenant, typed } = entry.parse(&job.input, job.tenant_id.as_ref());
    let capped = entry.descriptor().concurrency;
    let declared = Declared { entry, tenant };
    let keyed = capped.is_some_and(|cap| cap.keyed);
    let (body, key) = match typed {
        Ok(Typed { body, key }) => (Ok(body), key),
        // A keyed cap cannot be decided without its key (the payload no longer parses, or the
        // key is refused): this attempt fails. (A capped job never runs on a driver with no
        // lease store: the worker refuses to start.)
        Err(error) if keyed => {
            let refusal = Refusal::Undecidable(declared, error);
            return Here::Decided(deny(shared, claimed, refusal));
        }
        // The attempt fails with it as the body would.
        Err(error) => (Err(error), None),
    };
    if capped.is_some() {
        return Here::Capped(Capped {
            claimed,
            declared,
            body,
            key,
            now,
        });
    }
    Here::Decided(Admission::Admitted(Admitted {
        claimed,
        declared,
        body,
        held: Vec::new(),
        at: now,
    }))
}

/// A capped job's fleet slot: admitted with it, or turned away.
async fn admit_capped(shared: &WorkerShared, capped: Capped) -> Admission {
    let Capped {
        claimed,
        declared,
        body,
        key,
        now,
    } = capped;
    match take_fleet_slots(shared, &declared.entry, &claimed.job, key, now).await {
        Ok(held) => Admission::Admitted(Admitted {
            claimed,
            declared,
            body,
            held,
            at: now,
        }),
        Err(Denied::Shed(limit)) => deny(shared, claimed, Refusal::Shed(limit)),
        Err(Denied::Busy(error)) => deny(shared, claimed, Refusal::Busy(declared, error)),
        Err(Denied::Undecidable(error)) => {
            deny(shared, claimed, Refusal::Undecidable(declared, error))
        }
    }
}

/// Refuses a claim that took a per-process place: the place is given back first.
fn deny(shared: &WorkerShared, claimed: Claimed, refusal: Refusal) -> Admission {
    shared.limiter.leave(&shared.limits, &claimed.job);
    Admission::Refused(Refused { claimed, refusal })
}

/// Why no fleet slot was taken.
enum Denied {
    Shed(&'static str),
    Busy(JobError),
    Undecidable(JobError),
}

/// Takes the fleet slot a capped job needs, under `key` for a keyed cap. A fleet slot lives as
/// long as the claim: the same TTL, renewed by the same heartbeat.
async fn take_fleet_slots(
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
pub(crate) async fn renew(
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

/// Gives back what admission took for a run that started: its fleet slots, then its
/// per-process place. Called by the settle stage, once the ending is written.
pub(crate) async fn leave(shared: &WorkerShared, job: &ClaimedJob, held: &[HeldLease]) {
    if !held.is_empty() {
        // Boxed: only a capped job holds slots; every settle's future carried this one.
        Box::pin(release_fleet_slots(shared, held)).await;
    }
    shared.limiter.leave(&shared.limits, job);
}

/// Gives back the fleet slots a run held.
async fn release_fleet_slots(shared: &WorkerShared, held: &[HeldLease]) {
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
