//! The per-process limits ([`Limits`]: global, per queue, per tenant, and a per-tenant start
//! rate), and the counters behind them: they count this worker's own runs.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use crate::clock::{add, Timestamp};
use crate::driver::ClaimedJob;
use crate::error::{ErrorCode, JobError};

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

    /// No limit at all: nothing to count.
    fn is_unlimited(&self) -> bool {
        *self == Limits::default()
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
    pub(crate) fn enter(
        &self,
        limits: &Limits,
        job: &ClaimedJob,
        now: Timestamp,
    ) -> Result<(), &'static str> {
        if limits.is_unlimited() {
            return Ok(());
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let tenant = job.tenant_id.as_deref().unwrap_or(NO_TENANT).to_string();
        let over = |limit: Option<u32>, used: u32| limit.is_some_and(|l| used >= l);
        if over(limits.global, s.global) {
            return Err("global");
        }
        if over(
            limits.per_queue,
            s.queues.get(&*job.queue).copied().unwrap_or(0),
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
        *s.queues.entry(job.queue.to_string()).or_insert(0) += 1;
        *s.tenants.entry(tenant).or_insert(0) += 1;
        Ok(())
    }

    /// Gives the place back once the run settles.
    pub(crate) fn leave(&self, limits: &Limits, job: &ClaimedJob) {
        self.give_back(limits, job, false);
    }

    /// Gives the place back for a run admission turned away after [`Limiter::enter`] (a fleet
    /// cap, a busy key, a rate limit, a key that did not derive): its body never started, so
    /// the tenant start-rate token it spent is refunded too, as the reference spends none.
    pub(crate) fn leave_unstarted(&self, limits: &Limits, job: &ClaimedJob) {
        self.give_back(limits, job, true);
    }

    fn give_back(&self, limits: &Limits, job: &ClaimedJob, refund: bool) {
        if limits.is_unlimited() {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let tenant = job.tenant_id.as_deref().unwrap_or(NO_TENANT);
        if let (true, Some(rate)) = (refund, limits.tenant_rate) {
            if let Some((tokens, _)) = s.buckets.get_mut(tenant) {
                *tokens = (*tokens + 1.0).min(rate.max(1.0));
            }
        }
        s.global = s.global.saturating_sub(1);
        if let Some(n) = s.queues.get_mut(&*job.queue) {
            *n = n.saturating_sub(1);
        }
        if let Some(n) = s.tenants.get_mut(tenant) {
            *n = n.saturating_sub(1);
        }
    }
}

/// When a shed claim is claimable again.
pub(crate) fn shed_until(now: Timestamp) -> Timestamp {
    add(now, SHED_DELAY)
}
