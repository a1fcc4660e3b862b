//! Stage 2, admit: whether a claimed job may start here and now.
//!
//! First the registry (no code for the name here: hand it back), then two layers, as in the
//! reference. The per-process limits ([`Limits`](super::Limits)) count this worker's own runs.
//! The fleet-wide caps and rates (`#[job(concurrency = ..)]`, `#[job(rate(..))]`, the queue's
//! [`QueueLimits`](super::QueueLimits)) hold slots in the driver's lease store
//! (`fleet_slots.rs`). Over any cap or rate the claim is handed back without spending an
//! attempt (a shed); `when_busy = fail` is the one refusal.
//!
//! The stored input is parsed here, once for the whole attempt: the typed body, the run's
//! tenant and the concurrency and rate keys all come out of that one parse.

use std::sync::Arc;

use super::claim::Claimed;
use super::fleet_slots;
use super::WorkerShared;
use crate::clock::Timestamp;
use crate::driver::lease::HeldLease;
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
    /// Over a per-process limit or a fleet cap or rate (the name of which): hand it back
    /// uncounted, due again at the moment given (when a rate's window frees a start), or after
    /// the shed delay.
    Shed(&'static str, Option<Timestamp>),
    /// `when_busy = fail` and the key is busy: settle `failed`, outcome `refused`.
    Busy(Declared, JobError),
    /// Reached after its `expires_in`, before its first attempt started: settle `failed`,
    /// outcome `expired`, never run.
    Expired(Declared, JobError),
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
    /// A capped or rate-limited job, admitted here, that still needs its fleet slots.
    Capped(Capped),
}

struct Capped {
    claimed: Claimed,
    declared: Declared,
    body: Result<ErasedBody, JobError>,
    keys: fleet_slots::RunKeys,
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
    if let Some(error) = expired(entry.descriptor(), &claimed.job, now) {
        let tenant = claimed.job.tenant_id.clone();
        let refusal = Refusal::Expired(Declared { entry, tenant }, error);
        return Here::Decided(Admission::Refused(Refused { claimed, refusal }));
    }
    if let Err(limit) = shared.limiter.enter(&shared.limits, &claimed.job, now) {
        return Here::Decided(Admission::Refused(Refused {
            claimed,
            refusal: Refusal::Shed(limit, None),
        }));
    }
    let job = &claimed.job;
    let ParsedInput { tenant, typed } = entry.parse(&job.input, job.tenant_id.as_ref());
    let descriptor = entry.descriptor();
    let keyed = descriptor.concurrency.is_some_and(|cap| cap.keyed)
        || descriptor.rate.is_some_and(|rate| rate.keyed);
    let fleet = fleet_slots::needed(shared, &entry, &job.queue);
    let declared = Declared { entry, tenant };
    let (body, keys) = match typed {
        Ok(Typed {
            body,
            key,
            rate_key,
        }) => (
            Ok(body),
            fleet_slots::RunKeys {
                concurrency: key,
                rate: rate_key,
            },
        ),
        // A keyed cap or rate cannot be decided without its key (the payload no longer
        // parses, or the key is refused): this attempt fails. (A capped job never runs on a
        // driver with no lease store: the worker refuses to start.)
        Err(error) if keyed => {
            let refusal = Refusal::Undecidable(declared, error);
            return Here::Decided(deny(shared, claimed, refusal));
        }
        // The attempt fails with it as the body would.
        Err(error) => (Err(error), fleet_slots::RunKeys::default()),
    };
    if fleet {
        return Here::Capped(Capped {
            claimed,
            declared,
            body,
            keys,
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

/// A capped or rate-limited job's fleet slots: admitted with them, or turned away.
async fn admit_capped(shared: &WorkerShared, capped: Capped) -> Admission {
    let Capped {
        claimed,
        declared,
        body,
        keys,
        now,
    } = capped;
    match fleet_slots::take(shared, &declared.entry, &claimed.job, keys, now).await {
        Ok(held) => Admission::Admitted(Admitted {
            claimed,
            declared,
            body,
            held,
            at: now,
        }),
        Err(fleet_slots::Denied::Shed(limit, until)) => {
            deny(shared, claimed, Refusal::Shed(limit, until))
        }
        Err(fleet_slots::Denied::Busy(error)) => {
            deny(shared, claimed, Refusal::Busy(declared, error))
        }
        Err(fleet_slots::Denied::Undecidable(error)) => {
            deny(shared, claimed, Refusal::Undecidable(declared, error))
        }
    }
}

/// `X_JOB_EXPIRED` when the job declares `expires_in` and its first attempt, not yet started
/// (no attempt counted before this one, no step written), is reached at or after its enqueue
/// plus `expires_in`. A retry has started, so it never expires.
fn expired(
    descriptor: &crate::descriptor::JobDescriptor,
    job: &crate::driver::ClaimedJob,
    now: Timestamp,
) -> Option<JobError> {
    let ttl = descriptor.expires_in?;
    let started = job.attempt > 1 || job.has_steps;
    if started || now < crate::clock::add(job.created_at, ttl) {
        return None;
    }
    Some(JobError::new(
        ErrorCode::JobExpired,
        format!(
            "job `{}` was not started within its expires_in ({} ms after its enqueue); discarded",
            descriptor.name,
            ttl.as_millis()
        ),
    ))
}

/// Refuses a claim that took a per-process place: the place is given back first, and the
/// tenant start-rate token it spent with it (its body never starts).
fn deny(shared: &WorkerShared, claimed: Claimed, refusal: Refusal) -> Admission {
    shared.limiter.leave_unstarted(&shared.limits, &claimed.job);
    Admission::Refused(Refused { claimed, refusal })
}
