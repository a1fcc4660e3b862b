//! Each job's history: the acts recorded beside the queue (at most [`MAX_HISTORY_PAGE`] rows a
//! job), the purge's share of them, and the page an operator reads, newest first.

use super::{Act, OperatorState};
use crate::clock::Timestamp;
use crate::driver::introspect::*;
use crate::driver::memory::MemoryDriver;
use crate::driver::records::*;
use crate::error::JobError;

/// One stored history row: the entry, the tenant its job had, and its insertion order.
#[derive(Debug, Clone)]
pub(super) struct HistoryRow {
    seq: u64,
    tenant_id: Option<String>,
    entry: JobHistoryEntry,
}

impl OperatorState {
    /// Appends `act` to the history of `record`'s job (in the same lock as the act itself).
    pub(in crate::driver::memory) fn record(&mut self, record: &JobRecord, act: Act<'_>) {
        self.history_seq += 1;
        let rows = self.history.entry(record.id).or_default();
        if rows.len() >= MAX_HISTORY_PAGE as usize {
            rows.pop_front();
        }
        rows.push_back(HistoryRow {
            seq: self.history_seq,
            tenant_id: record.tenant_id.clone(),
            entry: JobHistoryEntry {
                job_id: record.id,
                at: act.at,
                actor: act.actor.map(str::to_string),
                verb: act.verb.as_str().to_string(),
                detail: act.detail.map(str::to_string),
            },
        });
    }

    /// The purge's share: up to `limit` history rows of jobs `stored` no longer answers for,
    /// written before `before`, oldest first.
    pub(in crate::driver::memory) fn purge_history(
        &mut self,
        stored: impl Fn(&JobId) -> bool,
        before: Timestamp,
        limit: u32,
    ) {
        let mut doomed: Vec<(Timestamp, u64, JobId)> = self
            .history
            .iter()
            .filter(|(id, _)| !stored(id))
            .flat_map(|(id, rows)| {
                rows.iter()
                    .filter(|r| r.entry.at < before)
                    .map(|r| (r.entry.at, r.seq, *id))
            })
            .collect();
        doomed.sort();
        doomed.truncate(limit as usize);
        for (_, seq, id) in doomed {
            if let Some(rows) = self.history.get_mut(&id) {
                rows.retain(|r| r.seq != seq);
                if rows.is_empty() {
                    self.history.remove(&id);
                }
            }
        }
    }
}

/// The page of `params.id`'s history an operator reads, newest first.
pub(super) fn list(
    driver: &MemoryDriver,
    params: &JobHistoryParams,
) -> Result<Vec<JobHistoryEntry>, JobError> {
    let limit = check_history(params)?;
    let state = driver.lock();
    let Some(rows) = state.operator.history.get(&params.id) else {
        return Ok(Vec::new());
    };
    let mut rows: Vec<&HistoryRow> = rows
        .iter()
        .filter(|r| {
            params
                .tenant_id
                .as_ref()
                .is_none_or(|t| r.tenant_id.as_ref() == Some(t))
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse((r.entry.at, r.seq)));
    Ok(rows
        .into_iter()
        .take(limit as usize)
        .map(|r| r.entry.clone())
        .collect())
}
