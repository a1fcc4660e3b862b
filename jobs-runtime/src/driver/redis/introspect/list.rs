//! The job list: keyset pages newest first by `(created_at, id)`. Each queue's `ALL` index (or
//! the one state's index) is a lex zset of `'<created micros, 17 digits>:<id>'`, so a cursor and
//! the creation window are one lex range; each queue answers its first `limit` matching rows
//! from the range's near end (`lua/introspect_list.lua`), and the shares merge here.

use std::cmp::Reverse;

use super::super::scripts;
use super::super::RedisDriver;
use super::record;
use crate::clock::Timestamp;
use crate::driver::introspect::*;
use crate::driver::Operation as Op;
use crate::error::JobError;

/// Index entries one script looks at before it answers (a page left short goes on in the next).
const SCRIPT_BUDGET: usize = 5_000;

/// The lex range of a page, and which end it is read from.
#[derive(Debug)]
struct Range {
    min: String,
    max: String,
    /// Newest first (a first page, or `after` a cursor); else oldest first (`before` one).
    newest_first: bool,
}

/// The index member of a row created at `micros` with id `id` (as `lib.lua` writes it).
fn member(cursor: &JobCursor) -> String {
    format!("{:017}:{}", cursor.created_micros, cursor.id)
}

/// The members' common prefix for rows created at `at`: every such member sorts after it and
/// before the prefix of the next microsecond.
fn created(at: Timestamp) -> String {
    format!("{:017}", at.timestamp_micros())
}

impl Range {
    fn of(params: &JobListParams, cursor: Option<Cursor>) -> Range {
        // Rows before both exclusive upper bounds: before the smaller.
        let mut upper = params.created_to.map(created);
        let mut after_member = None;
        if let Some(Cursor::After(c)) = cursor {
            let m = member(&c);
            upper = Some(match upper {
                Some(u) if u < m => u,
                _ => m,
            });
        }
        if let Some(Cursor::Before(c)) = cursor {
            after_member = Some(member(&c));
        }
        let from = params.created_from.map(created);
        // At or after `from` (inclusive) and after the cursor (exclusive): whichever is later.
        let min = match (from, after_member) {
            (Some(f), Some(c)) if f > c => format!("[{f}"),
            (_, Some(c)) => format!("({c}"),
            (Some(f), None) => format!("[{f}"),
            (None, None) => "-".to_string(),
        };
        Range {
            min,
            max: upper.map_or_else(|| "+".to_string(), |u| format!("({u}")),
            newest_first: !matches!(cursor, Some(Cursor::Before(_))),
        }
    }
}

/// A page of the jobs matching `params`.
pub(super) async fn job_list(
    driver: &RedisDriver,
    params: &JobListParams,
) -> Result<JobPage, JobError> {
    let (limit, cursor) = check_list(params)?;
    let queues = match &params.queue {
        Some(queue) => vec![queue.clone()],
        None => driver.queues(Op::IntrospectJobList).await?,
    };
    let range = Range::of(params, cursor);
    let shares = queues
        .iter()
        .map(|queue| share(driver, queue, params, &range, limit as usize));
    let mut rows: Vec<JobSummary> = futures::future::try_join_all(shares)
        .await?
        .into_iter()
        .flatten()
        .collect();
    let key = |j: &JobSummary| (j.created_at.timestamp_micros(), j.id);
    if range.newest_first {
        rows.sort_by_key(|j| Reverse(key(j)));
        rows.truncate(limit as usize);
    } else {
        // The rows just newer than the cursor, shown newest first like every page.
        rows.sort_by_key(key);
        rows.truncate(limit as usize);
        rows.reverse();
    }
    Ok(page_of(rows, limit, cursor))
}

/// One queue's first `limit` matching rows from the near end of `range`, in as many scripts as
/// the budget takes.
async fn share(
    driver: &RedisDriver,
    queue: &str,
    params: &JobListParams,
    range: &Range,
    limit: usize,
) -> Result<Vec<JobSummary>, JobError> {
    let (mut min, mut max) = (range.min.clone(), range.max.clone());
    let mut rows = Vec::new();
    loop {
        let mut invocation = scripts::on_queue(&scripts::INTROSPECT_LIST, driver.keys(), queue);
        invocation
            .arg(params.state.map(|s| s.as_str()).unwrap_or(""))
            .arg(&min)
            .arg(&max)
            .arg(if range.newest_first { "desc" } else { "asc" })
            .arg(limit - rows.len())
            .arg(SCRIPT_BUDGET);
        if let Some(name) = &params.name {
            invocation.arg("name").arg(name);
        }
        if let Some(tenant) = &params.tenant_id {
            invocation.arg("tenant").arg(tenant);
        }
        if let Some(prefix) = &params.id_prefix {
            invocation.arg("id").arg(prefix);
        }
        let (found, resume): (Vec<Vec<String>>, String) = driver
            .conn()
            .script(Op::IntrospectJobList, &invocation)
            .await?;
        for row in found {
            rows.push(JobSummary::from(&record(row)?));
        }
        if rows.len() >= limit || resume.is_empty() {
            return Ok(rows);
        }
        if range.newest_first {
            max = format!("({resume}");
        } else {
            min = format!("({resume}");
        }
    }
}
