//! The checks and refusals every driver's operator verbs share, so that all answer with the
//! same codes and messages: a list's and a history read's bounds, a page's cursors, a bulk
//! verb's state, and the refusals of the one-job verbs. Public so a driver outside this crate
//! applies them as the built-in ones do:
//!
//! ```
//! use jobs::driver::introspect::{check_list, page_of, JobListParams};
//!
//! let params = JobListParams { limit: Some(2), ..Default::default() };
//! let (limit, cursor) = check_list(&params).unwrap();
//! // .. read `limit` rows, newest first, after or before `cursor`, then:
//! let page = page_of(Vec::new(), limit, cursor);
//! assert!(page.jobs.is_empty() && page.after.is_none());
//! ```

use crate::driver::records::{JobId, JobRecord, JobState};
use crate::error::{ErrorCode, JobError};

use super::{
    JobCursor, JobHistoryParams, JobListParams, JobPage, JobSummary, DEFAULT_HISTORY_PAGE,
    DEFAULT_JOB_PAGE, MAX_HISTORY_PAGE, MAX_JOB_PAGE,
};

/// Checks a history read's bound: the limit to use.
pub fn check_history(params: &JobHistoryParams) -> Result<u32, JobError> {
    let limit = params.limit.unwrap_or(DEFAULT_HISTORY_PAGE);
    if limit == 0 || limit > MAX_HISTORY_PAGE {
        return Err(JobError::new(
            ErrorCode::JobPageInvalid,
            format!("a history read holds 1 to {MAX_HISTORY_PAGE} rows, not {limit}"),
        ));
    }
    Ok(limit)
}

/// Checks a list's bounds and cursors: the limit to use and the decoded cursor.
pub fn check_list(params: &JobListParams) -> Result<(u32, Option<Cursor>), JobError> {
    let limit = params.limit.unwrap_or(DEFAULT_JOB_PAGE);
    if limit == 0 || limit > MAX_JOB_PAGE {
        return Err(JobError::new(
            ErrorCode::JobPageInvalid,
            format!("a page holds 1 to {MAX_JOB_PAGE} rows, not {limit}"),
        ));
    }
    let cursor = match (&params.after, &params.before) {
        (Some(_), Some(_)) => {
            return Err(JobError::new(
                ErrorCode::Invariant,
                "a page is read either `after` or `before` a cursor, not both",
            ))
        }
        (Some(after), None) => Some(Cursor::After(JobCursor::parse(after, "after")?)),
        (None, Some(before)) => Some(Cursor::Before(JobCursor::parse(before, "before")?)),
        (None, None) => None,
    };
    Ok((limit, cursor))
}

/// A decoded list cursor.
#[derive(Debug, Clone, Copy)]
pub enum Cursor {
    /// Rows older than this one (the next page).
    After(JobCursor),
    /// Rows newer than this one (the previous page).
    Before(JobCursor),
}

/// Builds a page from the rows read (newest first), `limit` asked, and the cursor used.
pub fn page_of(jobs: Vec<JobSummary>, limit: u32, cursor: Option<Cursor>) -> JobPage {
    let full = jobs.len() as u32 >= limit;
    let first = jobs.first().map(|j| JobCursor::of(j).to_string());
    let last = jobs.last().map(|j| JobCursor::of(j).to_string());
    let (after, before) = match cursor {
        None => (last.filter(|_| full), None),
        Some(Cursor::After(_)) => (last.filter(|_| full), first),
        Some(Cursor::Before(_)) => (last, first.filter(|_| full)),
    };
    JobPage {
        jobs,
        after,
        before,
    }
}

/// Bulk verbs check the state they were asked to move.
pub fn check_bulk_state(verb: Bulk, state: JobState) -> Result<(), JobError> {
    let (ok, code, what) = match verb {
        Bulk::Requeue => (
            !state.is_live(),
            ErrorCode::JobNotRequeueable,
            "only done, failed, dead or cancelled rows can be requeued",
        ),
        Bulk::Remove => (
            state != JobState::Running,
            ErrorCode::JobNotRemovable,
            "running rows cannot be removed; cancel them first",
        ),
        Bulk::Promote => (
            matches!(state, JobState::Delayed | JobState::Ready),
            ErrorCode::JobNotPromotable,
            "only delayed or ready (backing off) rows can be promoted",
        ),
    };
    if ok {
        Ok(())
    } else {
        Err(JobError::new(code, format!("{what}, not `{state}` rows")))
    }
}

/// The three bulk verbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bulk {
    /// `introspect_job_requeue_many`: finished rows back to `ready`.
    Requeue,
    /// `introspect_job_remove_many`: rows that are not running, deleted.
    Remove,
    /// `introspect_job_promote_many`: waiting rows made due now.
    Promote,
}

/// The refusal for an id the queue does not hold.
pub fn not_found(id: JobId) -> JobError {
    JobError::new(ErrorCode::JobNotFound, format!("no job with id {id}"))
}

/// Why a job could not be requeued, removed or promoted, from its current row.
pub fn refusal(verb: Bulk, row: Option<&JobRecord>, id: JobId) -> JobError {
    let Some(row) = row else {
        return not_found(id);
    };
    match verb {
        Bulk::Requeue => JobError::new(
            ErrorCode::JobNotRequeueable,
            format!("job {id} is {}: only finished jobs are requeued", row.state),
        ),
        Bulk::Remove => JobError::new(
            ErrorCode::JobNotRemovable,
            format!("job {id} is running: cancel it first"),
        ),
        Bulk::Promote => JobError::new(
            ErrorCode::JobNotPromotable,
            format!("job {id} is {}, not waiting on its run time", row.state),
        ),
    }
}

/// The refusal for a requeue whose key a live job holds.
pub fn duplicate(row: &JobRecord, holder: Option<JobId>) -> JobError {
    let holder = holder.map_or_else(|| "a live job".to_string(), |h| format!("live job {h}"));
    JobError::new(
        ErrorCode::JobDuplicate,
        format!(
            "job {} cannot be requeued: {holder} of `{}` holds its idempotency key",
            row.id, row.name
        ),
    )
}

/// The refusal for a `from_step` the run does not have.
pub fn unknown_step(id: JobId, step: &str) -> JobError {
    JobError::new(
        ErrorCode::Invariant,
        format!("job {id} has no step named `{step}`"),
    )
    .with_fix("name a step the run recorded (see `jobs show <id>`)")
}
