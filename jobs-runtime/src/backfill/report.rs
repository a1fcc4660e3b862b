//! Declared vs ran: which backfills are pending, and which ledger names no declaration carries.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{BackfillDescriptor, BackfillPass, PassStatus};
use crate::error::{ErrorCode, JobError};

/// Where a declared backfill stands, from its newest pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackfillState {
    /// No pass was ever recorded: pending.
    Pending,
    /// The newest pass failed: pending.
    Failed,
    /// The newest pass is running: not pending.
    Running,
    /// The newest pass completed: not pending.
    Completed,
    /// Declared for other environments than this one (`environments = [..]`): not pending
    /// here, whatever ran.
    Excluded,
}

impl BackfillState {
    /// Whether the report lists it as pending.
    pub const fn is_pending(self) -> bool {
        matches!(self, BackfillState::Pending | BackfillState::Failed)
    }
}

/// One declared backfill in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingBackfill {
    /// The declared name.
    pub name: String,
    /// Where it stands.
    pub state: BackfillState,
    /// The newest pass's run, when there is one.
    pub last_run_id: Option<crate::driver::RunId>,
}

/// Declared vs ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingReport {
    /// The deployment environment the report was made for (`Jobs::environment`).
    pub environment: Option<String>,
    /// Every declared backfill with its state, sorted by name.
    pub rows: Vec<PendingBackfill>,
    /// The names of the pending ones (never run, or last failed).
    pub pending: Vec<String>,
    /// Ledger names no declaration carries any more (consumers' laps, `consumer:<name>`, are
    /// not backfills and never listed).
    pub orphaned: Vec<String>,
}

impl PendingReport {
    /// `X_BACKFILL_PENDING` when anything is pending (the `--pending` exit code).
    pub fn check(&self) -> Result<(), JobError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        Err(JobError::new(
            ErrorCode::BackfillPending,
            format!(
                "{} declared backfill(s) never completed: {}",
                self.pending.len(),
                self.pending.join(", ")
            ),
        ))
    }
}

/// The report of the `declared` backfills against the ledger's `passes` (any order), in
/// `environment`. A name's newest pass (by start) decides its state, unless the declaration
/// does not run in `environment` (`excluded`).
///
/// ```
/// use jobs::backfill::{pending_backfills, BackfillDescriptor, BackfillState, BackfillTenant};
/// let email = BackfillDescriptor::new("users.email", BackfillTenant::None, "src", "User", "sum");
/// let mut seed = BackfillDescriptor::new("demo.seed", BackfillTenant::None, "src", "Row", "sum");
/// seed.environments = &["staging"];
/// let report = pending_backfills(&[email, seed], &[], Some("production"));
/// assert_eq!(report.pending, ["users.email"]);
/// assert_eq!(report.rows[0].state, BackfillState::Excluded); // demo.seed, sorted first
/// assert_eq!(report.rows[1].state, BackfillState::Pending);
/// ```
pub fn pending_backfills(
    declared: &[BackfillDescriptor],
    passes: &[BackfillPass],
    environment: Option<&str>,
) -> PendingReport {
    let mut newest: BTreeMap<&str, &BackfillPass> = BTreeMap::new();
    for pass in passes {
        let slot = newest.entry(pass.name.as_str()).or_insert(pass);
        if (pass.started_at, pass.id) > (slot.started_at, slot.id) {
            *slot = pass;
        }
    }
    let declared: BTreeMap<&str, &BackfillDescriptor> =
        declared.iter().map(|d| (d.name, d)).collect();
    let rows: Vec<PendingBackfill> = declared
        .iter()
        .map(|(name, d)| {
            let last = newest.get(name);
            let state = match last.map(|p| p.status) {
                _ if !d.runs_in(environment) => BackfillState::Excluded,
                None => BackfillState::Pending,
                Some(PassStatus::Failed) => BackfillState::Failed,
                Some(PassStatus::Running) => BackfillState::Running,
                Some(PassStatus::Completed) => BackfillState::Completed,
            };
            PendingBackfill {
                name: name.to_string(),
                state,
                last_run_id: last.map(|p| p.run_id),
            }
        })
        .collect();
    PendingReport {
        environment: environment.map(str::to_string),
        pending: rows
            .iter()
            .filter(|r| r.state.is_pending())
            .map(|r| r.name.clone())
            .collect(),
        orphaned: newest
            .keys()
            .filter(|name| !declared.contains_key(*name))
            .filter(|name| !name.starts_with(crate::driver::backfill_store::CONSUMER_LEDGER_PREFIX))
            .map(|name| name.to_string())
            .collect(),
        rows,
    }
}
