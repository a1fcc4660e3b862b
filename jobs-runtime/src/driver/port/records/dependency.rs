//! Dependencies between jobs: a job enqueued with [`Dependencies`] is not claimed until every
//! job it names has settled, and what it does when one of them ends without completing is its
//! [`DependencyFailure`] policy. Every driver keeps the rule below ([`Verdict::of`]) the same
//! way, and waits a blocked job as [`BLOCKED_UNTIL`] says.

use serde::{Deserialize, Serialize};

use super::{JobId, JobState};
use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

/// The most jobs one enqueue may depend on.
pub const MAX_DEPENDENCIES: usize = 1_000;

/// How often a worker asks its driver to judge what a dead process left unjudged
/// ([`JobDriver::job_release_pending`](crate::driver::JobDriver::job_release_pending)).
pub const RELEASE_SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// What a dependent does when a job it depends on ends `failed`, `dead` or `cancelled`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencyFailure {
    /// It is cancelled, with `X_JOB_DEPENDENCY_FAILED` naming the dependency, and so are the
    /// jobs depending on it with the same policy (the default).
    #[default]
    Cancel,
    /// It runs anyway once every dependency has ended, however each ended.
    RunAnyway,
}

impl DependencyFailure {
    /// How a store keeps it (and the manifest shows it): `cancel` or `run_anyway`.
    pub fn as_str(self) -> &'static str {
        match self {
            DependencyFailure::Cancel => "cancel",
            DependencyFailure::RunAnyway => "run_anyway",
        }
    }

    /// Reads a stored policy back; anything but `run_anyway` is the default.
    pub fn from_stored(text: &str) -> Self {
        match text {
            "run_anyway" => DependencyFailure::RunAnyway,
            _ => DependencyFailure::Cancel,
        }
    }
}

/// The jobs an enqueued job waits for, and its policy when one of them fails.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependencies {
    /// The jobs it depends on: each must exist, in the new job's tenant, when it is named (so
    /// no cycle can be built). Repeats count once.
    pub on: Vec<JobId>,
    /// What it does when one of them ends without completing.
    pub on_failure: DependencyFailure,
}

impl Dependencies {
    /// Where a dependent naming these starts, from the states of the jobs it names that were
    /// found in its tenant (`found`): `X_JOB_NOT_FOUND` for the first one named and not found,
    /// else [`Verdict::of`] their states, started at `run_at` ([`Verdict::start`]). Every driver
    /// judges a new dependent this way.
    pub fn start_among(
        &self,
        found: &std::collections::BTreeMap<JobId, JobState>,
        run_at: Timestamp,
    ) -> Result<DependentStart, JobError> {
        if let Some(missing) = self.on.iter().find(|id| !found.contains_key(id)) {
            return Err(dependency_not_found(*missing));
        }
        let named = self.on.iter().map(|id| (*id, found.get(id).copied()));
        Ok(Verdict::of(self.on_failure, named).start(run_at))
    }
}

/// How long a blocked job waits: a dependent whose dependencies have not all settled is stored
/// `suspended` with this run time, so no claim ever reaches it, and is made `ready` (due at
/// once) by the settle of its last dependency. [`is_blocked`] reads it back.
pub fn blocked_until() -> Timestamp {
    chrono::DateTime::parse_from_rfc3339(BLOCKED_UNTIL)
        .expect("a valid time")
        .with_timezone(&chrono::Utc)
}

/// [`blocked_until`] as RFC 3339 text.
pub const BLOCKED_UNTIL: &str = "9999-12-31T00:00:00Z";

/// Whether a job in `state` due at `run_at` is blocked on its dependencies.
pub fn is_blocked(state: JobState, run_at: Timestamp) -> bool {
    state == JobState::Suspended && run_at == blocked_until()
}

/// A dependent's dependencies, each with its state (`None`: the row is gone).
pub type DependencyStates = Vec<(JobId, Option<JobState>)>;

/// What the settled states of a dependent's dependencies decide for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Some dependency is still live: it stays blocked.
    Blocked,
    /// Every dependency ended in a way its policy accepts: it becomes ready.
    Release,
    /// A dependency ended `failed`, `dead` or `cancelled` and the policy is
    /// [`DependencyFailure::Cancel`]: it is cancelled with this error.
    Cancel {
        /// The dependency that ended without completing.
        dependency: JobId,
        /// How it ended.
        state: JobState,
    },
}

impl Verdict {
    /// The verdict over each dependency's id and state (`None`: the row is gone, which happens
    /// only once it ended and retention removed it, and counts as completed).
    pub fn of(
        policy: DependencyFailure,
        dependencies: impl IntoIterator<Item = (JobId, Option<JobState>)>,
    ) -> Verdict {
        let mut live = false;
        for (id, state) in dependencies {
            match state {
                Some(s) if s.is_live() => live = true,
                Some(s @ (JobState::Failed | JobState::Dead | JobState::Cancelled))
                    if policy == DependencyFailure::Cancel =>
                {
                    return Verdict::Cancel {
                        dependency: id,
                        state: s,
                    };
                }
                _ => {}
            }
        }
        if live {
            Verdict::Blocked
        } else {
            Verdict::Release
        }
    }
}

/// Where a dependent starts, as every driver stores it: [`Verdict::start`].
#[derive(Debug)]
pub struct DependentStart {
    /// Its state: `suspended` (blocked), `cancelled`, or `ready`.
    pub state: JobState,
    /// Its run time: [`blocked_until`] while blocked, else the request's.
    pub run_at: Timestamp,
    /// The error a cancelled one carries.
    pub error: Option<JobError>,
}

impl DependentStart {
    /// The stored `last_error`.
    pub fn last_error(&self) -> Option<String> {
        self.error.as_ref().map(JobError::summary)
    }

    /// The stored `last_error_code`.
    pub fn last_error_code(&self) -> Option<&'static str> {
        self.error
            .as_ref()
            .and_then(JobError::code)
            .map(ErrorCode::as_str)
    }
}

impl Verdict {
    /// Where a dependent enqueued with this verdict starts: blocked, cancelled at once, or as
    /// any job due at `run_at` (never later than its enqueue: [`check_dependencies`]).
    pub fn start(self, run_at: Timestamp) -> DependentStart {
        match self {
            Verdict::Blocked => DependentStart {
                state: JobState::Suspended,
                run_at: blocked_until(),
                error: None,
            },
            Verdict::Cancel { dependency, state } => DependentStart {
                state: JobState::Cancelled,
                run_at,
                error: Some(dependency_failed(dependency, state)),
            },
            Verdict::Release => DependentStart {
                state: JobState::Ready,
                run_at,
                error: None,
            },
        }
    }
}

/// The error a dependent cancelled by [`Verdict::Cancel`] carries (its `last_error` and
/// `last_error_code`), naming the dependency, never an input.
pub fn dependency_failed(dependency: JobId, state: JobState) -> JobError {
    JobError::new(
        ErrorCode::JobDependencyFailed,
        format!("job {dependency}, which this job depends on, ended {state}"),
    )
}

/// Checks a request's dependencies before any write: at most [`MAX_DEPENDENCIES`], never the
/// job itself, and no run time of its own (a dependent starts when its dependencies are done).
/// Every driver refuses the same requests the same way.
pub fn check_dependencies(
    id: JobId,
    dependencies: &Dependencies,
    run_at: Timestamp,
    now: Timestamp,
) -> Result<(), JobError> {
    if dependencies.on.len() > MAX_DEPENDENCIES {
        return Err(JobError::new(
            ErrorCode::LimitExceeded,
            format!(
                "a job may depend on at most {MAX_DEPENDENCIES} jobs; this one names {}",
                dependencies.on.len()
            ),
        )
        .with_fix("join the jobs in a batch, or chain them through fewer dependencies"));
    }
    if dependencies.on.contains(&id) {
        return Err(JobError::new(
            ErrorCode::Invariant,
            format!("job {id} names itself as a dependency"),
        )
        .with_fix("name only jobs enqueued before this one"));
    }
    if run_at > now {
        return Err(JobError::new(
            ErrorCode::Invariant,
            "a job with dependencies was given a run time: it starts when they are done",
        )
        .with_fix("drop the run time or delay, or give the delay to a step (`run.sleep`)"));
    }
    Ok(())
}

/// Refuses a batch naming dependencies (`X_INVARIANT`): a dependent is enqueued one at a time.
/// Every driver's `job_enqueue_many` asks this first.
pub fn check_batch_without_dependencies(
    requests: &[super::EnqueueRequest],
) -> Result<(), JobError> {
    if requests.iter().any(|r| r.dependencies.is_some()) {
        return Err(JobError::new(
            ErrorCode::Invariant,
            "a batch enqueue named dependencies; a job with dependencies is enqueued on its own",
        )
        .with_fix(
            "enqueue each dependent job with `enqueue_with` and `EnqueueOptions::depends_on`",
        ));
    }
    Ok(())
}

/// The refusal of a dependency that does not exist in the new job's tenant (terminal; every
/// driver answers it before writing anything).
pub fn dependency_not_found(dependency: JobId) -> JobError {
    JobError::new(
        ErrorCode::JobNotFound,
        format!("job {dependency}, named as a dependency, does not exist in this tenant"),
    )
    .with_fix("name jobs already enqueued, in the same tenant as the new one")
}

/// A job's links to other jobs, as the operator reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobLinks {
    /// The jobs it depends on, each with its state (`None`: removed by retention).
    pub depends_on: DependencyStates,
    /// The jobs that depend on it (the first [`MAX_DEPENDENCIES`]).
    pub dependents: Vec<JobId>,
    /// Its policy when a dependency fails (`None`: it depends on nothing).
    pub on_dependency_failure: Option<DependencyFailure>,
    /// The job that invoked it (`Run::invoke`), if one did.
    #[serde(default)]
    pub parent: Option<JobId>,
    /// The jobs it invoked, each with its state (the first [`MAX_DEPENDENCIES`]).
    #[serde(default)]
    pub children: DependencyStates,
    /// The batch it is a member of, or whose callback it is.
    #[serde(default)]
    pub batch: Option<super::GroupId>,
}

impl JobLinks {
    /// The links from a store's rows, each `(kind, id, state, policy)`: `on` a job it depends
    /// on (with that job's state, and its own policy), `by` a job depending on it, `parent`
    /// the job that invoked it, `child` a job it invoked (with its state), `batch` its batch.
    pub fn from_rows(
        rows: impl IntoIterator<Item = (String, JobId, Option<JobState>, Option<String>)>,
    ) -> JobLinks {
        let mut links = JobLinks::default();
        for (kind, id, state, policy) in rows {
            match kind.as_str() {
                "on" => {
                    links.depends_on.push((id, state));
                    links.on_dependency_failure =
                        policy.as_deref().map(DependencyFailure::from_stored);
                }
                "parent" => links.parent = Some(id),
                "child" => links.children.push((id, state)),
                "batch" => links.batch = Some(id),
                _ => links.dependents.push(id),
            }
        }
        links
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn the_verdict_waits_for_every_dependency_and_follows_the_policy() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let cancel = DependencyFailure::Cancel;
        let run = DependencyFailure::RunAnyway;
        let done = Some(JobState::Done);
        let dead = Some(JobState::Dead);
        let running = Some(JobState::Running);
        assert_eq!(
            Verdict::of(cancel, [(a, done), (b, running)]),
            Verdict::Blocked
        );
        assert_eq!(
            Verdict::of(cancel, [(a, done), (b, None)]),
            Verdict::Release
        );
        assert_eq!(
            Verdict::of(cancel, [(a, running), (b, dead)]),
            Verdict::Cancel {
                dependency: b,
                state: JobState::Dead
            }
        );
        assert_eq!(
            Verdict::of(run, [(a, running), (b, dead)]),
            Verdict::Blocked
        );
        assert_eq!(Verdict::of(run, [(a, done), (b, dead)]), Verdict::Release);
        assert!(is_blocked(JobState::Suspended, blocked_until()));
        assert!(!is_blocked(JobState::Delayed, blocked_until()));
    }

    #[test]
    fn requests_are_checked_before_any_write() {
        let id = Uuid::now_v7();
        let now = blocked_until() - chrono::Duration::days(1);
        let deps = |on: Vec<Uuid>| Dependencies {
            on,
            on_failure: DependencyFailure::Cancel,
        };
        assert!(check_dependencies(id, &deps(vec![Uuid::now_v7()]), now, now).is_ok());
        let selfish = check_dependencies(id, &deps(vec![id]), now, now).unwrap_err();
        assert_eq!(selfish.code(), Some(ErrorCode::Invariant));
        let many = deps((0..=MAX_DEPENDENCIES).map(|_| Uuid::now_v7()).collect());
        let error = check_dependencies(id, &many, now, now).unwrap_err();
        assert_eq!(error.code(), Some(ErrorCode::LimitExceeded));
        let later = now + chrono::Duration::seconds(1);
        let error = check_dependencies(id, &deps(vec![Uuid::now_v7()]), later, now).unwrap_err();
        assert_eq!(error.code(), Some(ErrorCode::Invariant));
        assert!(error.fix().unwrap().contains("run.sleep"));
    }
}
