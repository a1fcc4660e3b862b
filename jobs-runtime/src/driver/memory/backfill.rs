//! The memory driver's [`BackfillStore`]: the Postgres table's twin, one mutex over the rows.

use std::sync::Mutex;

use async_trait::async_trait;

use crate::driver::backfill_store::*;
use crate::error::JobError;

/// The passes, oldest first.
#[derive(Debug, Default)]
pub(crate) struct MemoryBackfills {
    passes: Mutex<Vec<BackfillPass>>,
    /// The app's applied migration versions (`MemoryDriver::record_migration`).
    migrations: Mutex<std::collections::BTreeSet<i64>>,
}

impl MemoryBackfills {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<BackfillPass>> {
        self.passes.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn record_migration(&self, version: i64) {
        self.migrations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(version);
    }

    fn update(&self, run_id: crate::driver::RunId, change: impl FnOnce(&mut BackfillPass)) {
        if let Some(pass) = self.lock().iter_mut().find(|p| p.run_id == run_id) {
            change(pass);
        }
    }
}

#[async_trait]
impl BackfillStore for MemoryBackfills {
    async fn backfill_begin(&self, p: &BackfillBeginParams) -> Result<BackfillBegin, JobError> {
        let mut passes = self.lock();
        let previous = passes
            .iter()
            .filter(|r| {
                r.name == p.name && r.tenant == p.tenant && r.status == PassStatus::Completed
            })
            .max_by_key(|r| r.finished_at);
        let previous_checksum = previous.map(|r| r.checksum.clone());
        if passes.iter().any(|r| r.run_id == p.run_id) {
            return Ok(BackfillBegin::Started {
                adopted: true,
                previous_checksum,
            });
        }
        if let (Some(previous), false) = (previous, p.force) {
            return Ok(BackfillBegin::Skipped {
                previous_run_id: previous.run_id,
            });
        }
        passes.push(BackfillPass {
            id: p.id,
            name: p.name.clone(),
            tenant: p.tenant.clone(),
            run_id: p.run_id,
            job_id: p.job_id,
            checksum: p.checksum.clone(),
            status: PassStatus::Running,
            forced: p.force,
            batches: 0,
            rows: 0,
            last_cursor: None,
            started_at: p.now,
            updated_at: p.now,
            finished_at: None,
        });
        Ok(BackfillBegin::Started {
            adopted: false,
            previous_checksum,
        })
    }

    async fn backfill_progress(&self, p: &BackfillProgressParams) -> Result<(), JobError> {
        self.update(p.run_id, |r| {
            r.batches = p.batches;
            r.rows = p.rows;
            r.last_cursor = p.last_cursor.clone();
            r.updated_at = p.now;
        });
        Ok(())
    }

    async fn backfill_finish(&self, p: &BackfillFinishParams) -> Result<(), JobError> {
        self.update(p.run_id, |r| {
            r.status = p.status;
            r.batches = p.batches;
            r.rows = p.rows;
            r.last_cursor = p.last_cursor.clone();
            r.updated_at = p.now;
            r.finished_at = Some(p.now);
        });
        Ok(())
    }

    async fn backfill_list(&self, p: &BackfillListParams) -> Result<Vec<BackfillPass>, JobError> {
        let limit = p.limit.unwrap_or(DEFAULT_BACKFILL_LIST_LIMIT) as usize;
        let passes = self.lock();
        Ok(passes
            .iter()
            .rev()
            .filter(|r| p.name.as_ref().is_none_or(|name| *name == r.name))
            .filter(|r| p.status.is_none_or(|status| status == r.status))
            .filter(|r| p.run_id.is_none_or(|run_id| run_id == r.run_id))
            .take(limit)
            .cloned()
            .collect())
    }

    async fn backfill_migration_applied(&self, version: i64) -> Result<bool, JobError> {
        Ok(self
            .migrations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&version))
    }
}
