//! [`Backfills`], the handle the client gives on the declared backfills: enqueue one by name
//! (the operator's verb), list the pass ledger, and report the pending ones.

use super::{
    pending_backfills, registered_backfill, registered_backfills, BackfillRequest, PendingReport,
};
use crate::client::{Enqueued, Jobs};
use crate::driver::backfill_store::{BackfillListParams, BackfillPass, BackfillStore, PassStatus};
use crate::error::{ErrorCode, JobError};

/// The ledger rows the pending report reads (newest first, across every name).
const REPORT_SCAN: u32 = 10_000;

impl Jobs {
    /// The declared backfills: enqueue one by name, list the pass ledger, report the pending.
    pub fn backfills(&self) -> Backfills<'_> {
        Backfills { jobs: self }
    }
}

/// The declared backfills and their pass ledger; from [`Jobs::backfills`].
#[derive(Debug, Clone, Copy)]
pub struct Backfills<'a> {
    jobs: &'a Jobs,
}

impl Backfills<'_> {
    fn backfill_store(&self) -> Result<&dyn BackfillStore, JobError> {
        self.jobs
            .driver_part(|d| d.backfill_store(), "keeps no ledger of backfill passes")
    }

    /// The operator's gate before a pass of `name` is enqueued, without enqueueing it:
    /// `X_BACKFILL_UNKNOWN` for a name no `#[backfill]` declares, `X_BACKFILL_ENVIRONMENT`
    /// when it does not run in this client's environment ([`Jobs::environment`]),
    /// `X_BACKFILL_MIGRATION_PENDING` when the migration it `requires` is not applied in the
    /// store's database, `X_BACKFILL_APPLIED` when a completed pass exists and `force` is off.
    pub async fn gate(
        &self,
        name: &str,
        request: &BackfillRequest,
    ) -> Result<&'static super::BackfillEntry, JobError> {
        let entry = registered_backfill(name).ok_or_else(|| {
            JobError::new(
                ErrorCode::BackfillUnknown,
                format!("no `#[backfill]` is declared under the name `{name}`"),
            )
            .with_fix("name a declared backfill: `jobs backfills --pending` lists them")
        })?;
        let d = entry.descriptor();
        super::pass::check_environment(d, self.jobs.environment().as_deref())?;
        if let Some(id) = d.requires {
            let version = d.required_version().ok_or_else(|| {
                JobError::new(
                    ErrorCode::Invariant,
                    format!("backfill `{name}` requires a migration id that names no version"),
                )
            })?;
            if !self
                .backfill_store()?
                .backfill_migration_applied(version)
                .await?
            {
                return Err(JobError::new(
                    ErrorCode::BackfillMigrationPending,
                    format!(
                        "backfill `{name}` requires migration `{id}`, which the store's database \
                         does not record as applied"
                    ),
                )
                .with_fix(format!(
                    "apply migration {version} (sqlx migrate run), then enqueue the pass again"
                )));
            }
        }
        if !request.force {
            if let Some(ledger) = self.jobs.driver().backfill_store() {
                let completed = ledger
                    .backfill_list(&BackfillListParams {
                        name: Some(name.to_string()),
                        status: Some(PassStatus::Completed),
                        run_id: None,
                        limit: Some(REPORT_SCAN),
                    })
                    .await?;
                if let Some(previous) = completed.iter().find(|p| p.tenant == request.tenant) {
                    return Err(JobError::new(
                        ErrorCode::BackfillApplied,
                        format!(
                            "backfill `{name}` completed in run {}; enqueue it with `force` to run it again",
                            previous.run_id
                        ),
                    ));
                }
            }
        }
        Ok(entry)
    }

    /// Enqueues the declared backfill `name` (the operator's verb, `jobs backfill <name>
    /// --write`) once [`Backfills::gate`] lets it, and refuses what the typed handle would
    /// quietly answer: `X_BACKFILL_RUNNING` when a live pass already holds the name (the
    /// message names its job).
    pub async fn enqueue(
        &self,
        name: &str,
        request: BackfillRequest,
    ) -> Result<Enqueued, JobError> {
        let entry = self.gate(name, &request).await?;
        let queued = entry.enqueue(self.jobs, request).await?;
        if queued.deduped {
            return Err(JobError::new(
                ErrorCode::BackfillRunning,
                format!(
                    "a pass of backfill `{name}` is already live as job {}; the enqueue deduped onto it",
                    queued.id
                ),
            ));
        }
        Ok(queued)
    }

    /// The ledger's passes, newest first, filtered.
    pub async fn list(&self, filter: BackfillListParams) -> Result<Vec<BackfillPass>, JobError> {
        self.backfill_store()?.backfill_list(&filter).await
    }

    /// Declared vs ran: every `#[backfill]` linked into this binary with the state of its
    /// newest pass, the pending ones (never run, or last failed) and the orphaned ledger names.
    pub async fn pending(&self) -> Result<PendingReport, JobError> {
        let passes = self
            .backfill_store()?
            .backfill_list(&BackfillListParams {
                limit: Some(REPORT_SCAN),
                ..BackfillListParams::default()
            })
            .await?;
        let declared: Vec<_> = registered_backfills()
            .iter()
            .map(|e| *e.descriptor())
            .collect();
        Ok(pending_backfills(
            &declared,
            &passes,
            self.jobs.environment().as_deref(),
        ))
    }

    /// Enqueues a pass of every pending backfill (`jobs backfills --all --write`), each
    /// through [`Backfills::enqueue`] on its own: a refusal (a migration not applied, a
    /// `per_tenant` backfill, which names no tenant here) is answered for its name and the
    /// rest still go. A pass whose newest run failed is enqueued again, not forced.
    pub async fn enqueue_pending(&self) -> Result<Vec<PendingEnqueue>, JobError> {
        let report = self.pending().await?;
        let mut out = Vec::with_capacity(report.pending.len());
        for name in report.pending {
            let outcome = self.enqueue(&name, BackfillRequest::new()).await;
            out.push(PendingEnqueue { name, outcome });
        }
        Ok(out)
    }
}

/// One backfill [`Backfills::enqueue_pending`] tried: its pass, or why not.
#[derive(Debug)]
pub struct PendingEnqueue {
    /// The backfill.
    pub name: String,
    /// Its pass, or the refusal.
    pub outcome: Result<Enqueued, JobError>,
}
