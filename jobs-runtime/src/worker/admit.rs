//! Admission: whether a claimed job may start here and now.
//!
//! Two layers, as in the reference. The per-process limits ([`Limits`]: global, per queue, per
//! tenant, and a per-tenant start rate) count this worker's own runs. The fleet-wide caps
//! (`#[job(concurrency = ..)]`) hold slots in the driver's lease store: `job:<name>` for a
//! plain cap, `job-key:<name>:<key>` per key. Over any cap the claim is handed back without
//! spending an attempt (a shed); `when_busy = fail` is the one refusal.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::clock::{add, Timestamp};
use crate::driver::lease::{HeldLease, LeaseAcquire, LeaseStore};
use crate::driver::ClaimedJob;
use crate::error::{ErrorCode, JobError};
use crate::job::WhenBusy;
use crate::registry::JobEntry;

use super::WorkerShared;

/// How long a shed claim waits before it is claimable again.
pub const SHED_DELAY: Duration = Duration::from_secs(1);

/// Per-process limits on a worker. Every number is a ceiling; zero is a hard stop.
///
/// ```
/// use jobs::Limits;
/// let limits = Limits::new().global(32).per_tenant(4).tenant_starts_per_second(10.0);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    global: Option<u32>,
    per_queue: Option<u32>,
    per_tenant: Option<u32>,
    tenant_rate: Option<f64>,
}

impl Limits {
    /// No limits beyond the worker's slots.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs at once in this worker.
    pub fn global(mut self, runs: u32) -> Self {
        self.global = Some(runs);
        self
    }

    /// Runs at once per queue in this worker.
    pub fn per_queue(mut self, runs: u32) -> Self {
        self.per_queue = Some(runs);
        self
    }

    /// Runs at once per tenant in this worker.
    pub fn per_tenant(mut self, runs: u32) -> Self {
        self.per_tenant = Some(runs);
        self
    }

    /// Bodies started per second per tenant in this worker (a burst of one second's worth).
    pub fn tenant_starts_per_second(mut self, rate: f64) -> Self {
        self.tenant_rate = Some(rate);
        self
    }

    /// Refuses a rate that is negative or not finite (`X_INVARIANT`).
    pub(crate) fn check(&self) -> Result<(), JobError> {
        match self.tenant_rate {
            Some(rate) if !rate.is_finite() || rate < 0.0 => Err(JobError::new(
                ErrorCode::Invariant,
                "the worker's tenant start rate must be a finite number of starts per second, at least 0",
            )),
            _ => Ok(()),
        }
    }
}

/// What admission decided.
pub(crate) enum Admission {
    /// Start it; these fleet slots are held for it until it settles.
    Admitted(Vec<HeldLease>),
    /// Over a cap: hand the claim back uncounted.
    Shed(&'static str),
    /// `when_busy = fail` and the key is busy: settle `failed`, outcome `refused`.
    Refused(JobError),
    /// The cap could not be decided (the key did not derive): fail this attempt.
    Undecidable(JobError),
}

/// The per-process counters behind [`Limits`].
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    state: Mutex<LimiterState>,
}

#[derive(Debug, Default)]
struct LimiterState {
    global: u32,
    queues: HashMap<String, u32>,
    tenants: HashMap<String, u32>,
    /// Per tenant: the token bucket's tokens and when it was last filled.
    buckets: HashMap<String, (f64, Timestamp)>,
}

/// The bucket a job with no tenant counts in.
const NO_TENANT: &str = "";

impl Limiter {
    /// Takes a place for `job`, or names the limit it is over. A start spends a rate token.
    fn enter(&self, limits: &Limits, job: &ClaimedJob, now: Timestamp) -> Result<(), &'static str> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let tenant = job.tenant_id.as_deref().unwrap_or(NO_TENANT).to_string();
        let over = |limit: Option<u32>, used: u32| limit.is_some_and(|l| used >= l);
        if over(limits.global, s.global) {
            return Err("global");
        }
        if over(
            limits.per_queue,
            s.queues.get(&job.queue).copied().unwrap_or(0),
        ) {
            return Err("per-queue");
        }
        if over(
            limits.per_tenant,
            s.tenants.get(&tenant).copied().unwrap_or(0),
        ) {
            return Err("per-tenant");
        }
        if let Some(rate) = limits.tenant_rate {
            let (tokens, filled) = s.buckets.get(&tenant).copied().unwrap_or((rate, now));
            let elapsed = (now - filled).to_std().unwrap_or_default().as_secs_f64();
            let tokens = (tokens + elapsed * rate).min(rate.max(1.0));
            if tokens < 1.0 {
                s.buckets.insert(tenant, (tokens, now));
                return Err("tenant-rate");
            }
            s.buckets.insert(tenant.clone(), (tokens - 1.0, now));
        }
        s.global += 1;
        *s.queues.entry(job.queue.clone()).or_insert(0) += 1;
        *s.tenants.entry(tenant).or_insert(0) += 1;
        Ok(())
    }

    /// Gives the place back once the run settles (or was shed after entering).
    pub(crate) fn leave(&self, job: &ClaimedJob) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let tenant = job.tenant_id.as_deref().unwrap_or(NO_TENANT);
        s.global = s.global.saturating_sub(1);
        if let Some(n) = s.queues.get_mut(&job.queue) {
            *n = n.saturating_sub(1);
        }
        if let Some(n) = s.tenants.get_mut(tenant) {
            *n = n.saturating_sub(1);
        }
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

/// Decides whether `job` may start: per-process limits first (cheap, in memory), then the
/// fleet slots. A slot taken for a run that does not start is released at once.
pub(crate) async fn admit(shared: &WorkerShared, entry: &JobEntry, job: &ClaimedJob) -> Admission {
    let now = shared.jobs.now();
    if let Err(limit) = shared.limiter.enter(&shared.limits, job, now) {
        return Admission::Shed(limit);
    }
    let store = shared.jobs.driver().lease_store();
    // A fleet slot lives as long as the claim: the same TTL, renewed by the same heartbeat.
    let ttl = shared.visibility_timeout;
    let admission = take_fleet_slots(store, &shared.id, ttl, entry, job, now).await;
    if !matches!(admission, Admission::Admitted(_)) {
        shared.limiter.leave(job);
    }
    admission
}

async fn take_fleet_slots(
    store: Option<&dyn LeaseStore>,
    worker: &str,
    ttl: Duration,
    entry: &JobEntry,
    job: &ClaimedJob,
    now: Timestamp,
) -> Admission {
    let descriptor = entry.descriptor();
    let Some(cap) = descriptor.concurrency else {
        return Admission::Admitted(Vec::new());
    };
    let Some(store) = store else {
        // The worker refuses to start in this case; never run a capped job uncapped.
        return Admission::Undecidable(JobError::new(
            ErrorCode::JobConcurrencyUnenforceable,
            format!(
                "job `{}` declares concurrency and the driver has no lease store",
                descriptor.name
            ),
        ));
    };
    let key = if cap.keyed {
        match entry.concurrency_key(&job.input) {
            Ok(Some(key)) => keyed_lease_key(descriptor.name, &key),
            Ok(None) => {
                return Admission::Undecidable(JobError::new(
                    ErrorCode::JobDeclarationInvalid,
                    format!("job `{}` derived no concurrency key", descriptor.name),
                ))
            }
            Err(error) => return Admission::Undecidable(error),
        }
    } else {
        format!("job:{}", descriptor.name)
    };
    let holder = holder(worker, job);
    let asked = LeaseAcquire {
        key: key.clone(),
        limit: cap.limit,
        ttl,
        holder,
        now,
    };
    match store.lease_acquire(&asked).await {
        Ok(Some(lease)) => Admission::Admitted(vec![lease]),
        Ok(None) if cap.keyed && cap.when_busy == WhenBusy::Fail => {
            refuse_on_evidence(store, &key, job, now, descriptor.name).await
        }
        Ok(None) => Admission::Shed("concurrency"),
        Err(error) => Admission::Undecidable(error),
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
) -> Admission {
    match store.lease_holders(key, now).await {
        Ok(holders) if holders.iter().any(|h| !held_by_job(&h.holder, job)) => {
            Admission::Refused(JobError::new(
                ErrorCode::JobKeyBusy,
                format!(
                    "job `{name}` is declared when_busy = fail and its concurrency key is busy"
                ),
            ))
        }
        Ok(_) => Admission::Shed("own-claim"),
        Err(error) => Admission::Undecidable(error),
    }
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
        match store.lease_renew(lease, ttl, now).await? {
            Some(renewed) => *lease = renewed,
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// Gives every held slot back.
pub(crate) async fn release(store: Option<&dyn LeaseStore>, held: &[HeldLease]) {
    let Some(store) = store else { return };
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

/// When a shed claim is claimable again.
pub(crate) fn shed_until(now: Timestamp) -> Timestamp {
    add(now, SHED_DELAY)
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
