//! The job list: filters over the queue's rows, newest first by `(created_at, id)`, a page at
//! a time either side of a cursor.

use crate::driver::introspect::*;
use crate::driver::memory::MemoryDriver;
use crate::driver::records::*;
use crate::error::JobError;

/// A page of the jobs matching `params`.
pub(super) fn job_list(driver: &MemoryDriver, params: &JobListParams) -> Result<JobPage, JobError> {
    let (limit, cursor) = check_list(params)?;
    let state = driver.lock();
    let mut rows: Vec<&JobRecord> = state
        .jobs
        .values()
        .map(|j| &j.record)
        .filter(|r| params.queue.as_ref().is_none_or(|q| *q == r.queue))
        .filter(|r| params.name.as_ref().is_none_or(|n| *n == r.name))
        .filter(|r| params.state.is_none_or(|s| s == r.state))
        .filter(|r| {
            params
                .tenant_id
                .as_ref()
                .is_none_or(|t| Some(t) == r.tenant_id.as_ref())
        })
        .filter(|r| {
            params
                .id_prefix
                .as_ref()
                .is_none_or(|p| r.id.to_string().starts_with(p.as_str()))
        })
        .filter(|r| params.created_from.is_none_or(|f| r.created_at >= f))
        .filter(|r| params.created_to.is_none_or(|t| r.created_at < t))
        .collect();
    let key = |r: &JobRecord| (r.created_at.timestamp_micros(), r.id);
    rows.sort_by_key(|r| std::cmp::Reverse(key(r)));
    let page: Vec<JobSummary> = match cursor {
        None => rows
            .iter()
            .take(limit as usize)
            .map(|r| (*r).into())
            .collect(),
        Some(Cursor::After(c)) => rows
            .iter()
            .filter(|r| key(r) < (c.created_micros, c.id))
            .take(limit as usize)
            .map(|r| (*r).into())
            .collect(),
        Some(Cursor::Before(c)) => {
            let mut newer: Vec<JobSummary> = rows
                .iter()
                .rev()
                .filter(|r| key(r) > (c.created_micros, c.id))
                .take(limit as usize)
                .map(|r| (*r).into())
                .collect();
            newer.reverse();
            newer
        }
    };
    Ok(page_of(page, limit, cursor))
}
