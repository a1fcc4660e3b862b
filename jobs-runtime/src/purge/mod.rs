//! The purge job: one pass over purge targets that keeps the store bounded (expired events,
//! finished jobs and their steps, the webhook ledger's old attempts, an app's own tables).
//!
//! A purge is declared with `#[purge]`: a job whose body is one [`Purge`] pass over the targets
//! its fn builds, and a task that fires it, by default at [`DEFAULT_PURGE_CRON`]
//! (`23 * * * *`, once an hour, in UTC). Both go through `#[job]` and `#[task]`, so they are
//! checked at compile time like any other declaration; a worker and a scheduler run them.
//!
//! ```
//! use jobs::prelude::*;
//! use jobs::purge::{Purge, PurgePass};
//! use jobs::Retention;
//!
//! #[purge(name = "app.purge")] // the job `app.purge`, the task `app.purge.schedule`
//! fn app_purge(_run: &Run) -> Result<Purge, JobError> {
//!     Ok(Purge::new().expired_events().finished_jobs(Retention::default()))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let kit = jobs::testing::TestKit::new();
//! let job = kit.run::<AppPurge>(PurgePass::default()).await;
//! assert_eq!(job.state, JobState::Done);
//! # }
//! ```
//!
//! The same pair written out is a `#[job]` whose body is `Purge::new()...run(&run).await` and a
//! `#[task]` that enqueues it with [`PurgePass::default()`].
//!
//! # One step per target, one clock reading per pass
//!
//! A pass reads the clock once, in the durable step `purge:now`, and hands that instant to
//! every target. Each target then runs in a durable step named after it, in declaration order,
//! so a pass killed after its first target resumes at the second: the targets already done
//! replay their counts without deleting again, and the resumed targets see the same `now`.
//!
//! Targets are built per attempt (the body builds its [`Purge`]), so a target may hold what the
//! attempt gives it: `run.context::<App>()?`'s pool, a store's handle. Two targets under one
//! name, an empty name, or the reserved `purge:now` are refused with `X_INVARIANT` before the
//! clock is read or anything is deleted.
//!
//! # Why the targets are built by a fn
//!
//! The targets are values (pools, stores, retention windows), so they cannot live in a
//! declaration's arguments: `#[purge]` goes on the fn that builds them, per attempt.

mod builtin;
mod target;

pub use async_trait::async_trait;
pub use builtin::{
    ExpiredEvents, FinishedJobs, WebhookAttempts, DEFAULT_EVENT_PURGE_BATCH,
    DEFAULT_WEBHOOK_ATTEMPT_PURGE_BATCH, DEFAULT_WEBHOOK_ATTEMPT_RETENTION,
};
pub use target::PurgeTarget;

use std::collections::HashSet;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::driver::JobDriver;
use crate::error::{ErrorCode, JobError};
use crate::limits::MAX_STEP_NAME_BYTES;
use crate::maintenance::Retention;
use crate::run::Run;

/// The purge task's default schedule: minute 23 of every hour (off the hour, when other
/// scheduled work bunches up).
pub const DEFAULT_PURGE_CRON: &str = "23 * * * *";

/// The durable step that holds a pass's one clock reading.
pub const PURGE_CLOCK_STEP: &str = "purge:now";

/// What the purge job is enqueued with: nothing (each pass purges whatever has expired).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PurgePass {}

/// What one pass did: its clock reading and each target's deleted rows, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeReport {
    /// The pass's one clock reading, handed to every target.
    pub now: Timestamp,
    /// Each target's name and the rows it deleted (a replayed target: what it deleted then).
    pub targets: Vec<PurgedTarget>,
}

impl PurgeReport {
    /// Rows deleted by the target named `name`, if it ran.
    pub fn rows(&self, name: &str) -> Option<u64> {
        self.targets.iter().find(|t| t.name == name).map(|t| t.rows)
    }
}

/// One target's share of a pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgedTarget {
    /// The target's name.
    pub name: String,
    /// Rows it deleted.
    pub rows: u64,
}

/// A target the pass builds once it has the run's driver.
type Pending = Box<dyn FnOnce(&Arc<dyn JobDriver>) -> Box<dyn PurgeTarget> + Send>;

/// The targets of one purge pass, in the order they run. See the [module docs](self).
#[derive(Default)]
pub struct Purge {
    targets: Vec<Pending>,
}

impl std::fmt::Debug for Purge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Purge")
            .field("targets", &self.targets.len())
            .finish()
    }
}

impl Purge {
    /// A pass over no targets yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the built-in `events` target: events whose expiry has passed
    /// ([`ExpiredEvents`]), on the run's own store.
    pub fn expired_events(self) -> Self {
        self.with(|driver| Box::new(ExpiredEvents::new(driver.clone())))
    }

    /// Adds the built-in `jobs` target: finished jobs past `retention`'s windows and the steps
    /// of their runs ([`FinishedJobs`]), on the run's own store.
    pub fn finished_jobs(self, retention: Retention) -> Self {
        self.with(move |driver| Box::new(FinishedJobs::new(driver.clone(), retention)))
    }

    /// Adds the built-in `webhook_attempts` target: webhook delivery attempts older than
    /// `keep` ([`WebhookAttempts`]; [`DEFAULT_WEBHOOK_ATTEMPT_RETENTION`] is a week), on the
    /// run's own store's webhook ledger. Endpoints keep their standing.
    pub fn webhook_attempts(self, keep: std::time::Duration) -> Self {
        self.with(move |driver| Box::new(WebhookAttempts::new(driver.clone(), keep)))
    }

    /// Adds an app's own target (or a built-in built by hand, e.g. with another batch size).
    pub fn target(self, target: impl PurgeTarget + 'static) -> Self {
        self.with(move |_| Box::new(target))
    }

    fn with(
        mut self,
        build: impl FnOnce(&Arc<dyn JobDriver>) -> Box<dyn PurgeTarget> + Send + 'static,
    ) -> Self {
        self.targets.push(Box::new(build));
        self
    }

    /// Runs the pass inside `run`: refuses a bad set of names before anything else, reads the
    /// clock once (durably), then runs each target in its own durable step.
    pub async fn run(self, run: &Run) -> Result<PurgeReport, JobError> {
        let targets: Vec<Box<dyn PurgeTarget>> = self
            .targets
            .into_iter()
            .map(|build| build(run.driver()))
            .collect();
        check_names(run.job_name(), &targets)?;
        let now: Timestamp = run
            .step(PURGE_CLOCK_STEP, async { Ok::<_, JobError>(run.now()) })
            .await?;
        let mut report = PurgeReport {
            now,
            targets: Vec::with_capacity(targets.len()),
        };
        for target in &targets {
            let name = target.name();
            let rows: u64 = run.step(name, target.purge_expired(now)).await?;
            tracing::info!(
                target: "jobs.purge.target",
                job = run.job_name(),
                purge_target = name,
                rows,
                "purge target done"
            );
            report.targets.push(PurgedTarget {
                name: name.to_string(),
                rows,
            });
        }
        Ok(report)
    }
}

/// Each target's name is its step's name: unique, not empty, not the clock's step, and within
/// the step-name limit, all checked before the first delete.
fn check_names(job: &str, targets: &[Box<dyn PurgeTarget>]) -> Result<(), JobError> {
    let mut seen = HashSet::new();
    for target in targets {
        let name = target.name();
        let refusal = if name.is_empty() {
            Some("a purge target has an empty name".to_string())
        } else if name == PURGE_CLOCK_STEP {
            Some(format!(
                "a purge target is named `{PURGE_CLOCK_STEP}`, the step that holds the pass's clock reading"
            ))
        } else if name.len() > MAX_STEP_NAME_BYTES {
            Some(format!(
                "a purge target's name is {} bytes, over the {MAX_STEP_NAME_BYTES}-byte step-name limit",
                name.len()
            ))
        } else if !seen.insert(name) {
            Some(format!("two purge targets are named `{name}`"))
        } else {
            None
        };
        if let Some(message) = refusal {
            return Err(JobError::new(
                ErrorCode::Invariant,
                format!("purge job `{job}`: {message}; nothing was deleted"),
            )
            .with_fix(
                "give every target of one purge its own short name: it names the durable step the target runs in",
            ));
        }
    }
    Ok(())
}
