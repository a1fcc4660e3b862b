//! The job list: one keyset page, newest first by `(created_at, id)`, read from the reader pool.
//! The stored `created_at` has one width (so text order is time order) and ids are 16-byte
//! UUID blobs (byte order is UUID order), so SQLite's row-value comparison walks the same
//! keyset as Postgres' `(created_at, id) < ($8, $9)`.

use sqlx::sqlite::SqlitePool;
use sqlx::FromRow;

use super::super::classify::{classify, Op};
use super::super::time::ts;
use crate::driver::introspect::*;
use crate::driver::records::JobState;
use crate::error::JobError;

/// The summary columns (a page never carries inputs).
macro_rules! summary_columns {
    () => {
        "j.id, j.run_id, j.name, j.queue, j.tenant_id, j.state, j.attempt, j.max_attempts, \
         j.run_at, j.priority, j.created_at, j.updated_at, j.last_error, j.last_error_code, \
         j.progress"
    };
}

/// Every filter is optional (?1 queue, ?2 name, ?3 state, ?4 tenant, ?5 id prefix as upper-case
/// hex without dashes, ?6 created from, ?7 created before); ?8, ?9 the cursor; ?10 rows.
macro_rules! filters {
    () => {
        " from x_jobs j
          where (?1 is null or j.queue = ?1)
            and (?2 is null or j.name = ?2)
            and (?3 is null or j.state = ?3)
            and (?4 is null or j.tenant_id = ?4)
            and (?5 is null or hex(j.id) like ?5 || '%')
            and (?6 is null or j.created_at >= ?6)
            and (?7 is null or j.created_at < ?7)"
    };
}

/// The first page, or the next (older) one after a cursor.
const OLDER: &str = concat!(
    "select ",
    summary_columns!(),
    filters!(),
    " and (?8 is null or (j.created_at, j.id) < (?8, ?9))
      order by j.created_at desc, j.id desc
      limit ?10 + 0"
);

/// The previous (newer) page before a cursor, read oldest first (turned around after).
const NEWER: &str = concat!(
    "select ",
    summary_columns!(),
    filters!(),
    " and (j.created_at, j.id) > (?8, ?9)
      order by j.created_at asc, j.id asc
      limit ?10 + 0"
);

/// Where the dashes of a printed UUID stand.
const DASHES: [usize; 4] = [8, 13, 18, 23];

/// The stored form of an id prefix as printed (lower-case hex with dashes where a printed id
/// has them): its hex digits, upper-case, as `hex(id)` prints them. A prefix no printed id can
/// start with matches nothing (`~` is no hex digit), and no `like` wildcard ever gets through.
fn id_prefix(prefix: &Option<String>) -> Option<String> {
    prefix.as_ref().map(|p| {
        let printable = p.len() <= 36
            && p.char_indices().all(|(i, c)| {
                if DASHES.contains(&i) {
                    c == '-'
                } else {
                    c.is_ascii_hexdigit()
                }
            });
        if printable {
            p.chars()
                .filter(|c| *c != '-')
                .collect::<String>()
                .to_ascii_uppercase()
        } else {
            "~".to_string()
        }
    })
}

pub(super) async fn job_list(
    reader: &SqlitePool,
    params: &JobListParams,
) -> Result<JobPage, JobError> {
    let failed = |e| classify(Op::IntrospectJobList, e);
    let (limit, cursor) = check_list(params)?;
    let (sql, at) = match cursor {
        Some(Cursor::Before(c)) => (NEWER, Some(c)),
        Some(Cursor::After(c)) => (OLDER, Some(c)),
        None => (OLDER, None),
    };
    let rows = sqlx::query(sql)
        .bind(&params.queue)
        .bind(&params.name)
        .bind(params.state.map(JobState::as_str))
        .bind(&params.tenant_id)
        .bind(id_prefix(&params.id_prefix))
        .bind(ts(params.created_from))
        .bind(ts(params.created_to))
        .bind(ts(at.map(|c| c.created_at())))
        .bind(at.map(|c| c.id))
        .bind(i64::from(limit))
        .fetch_all(reader)
        .await
        .map_err(failed)?;
    let mut jobs = rows
        .iter()
        .map(|row| JobSummary::from_row(row).map_err(failed))
        .collect::<Result<Vec<_>, _>>()?;
    if matches!(cursor, Some(Cursor::Before(_))) {
        jobs.reverse();
    }
    Ok(page_of(jobs, limit, cursor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_prefix_matches_as_printed_or_not_at_all() {
        let some = |p: &str| id_prefix(&Some(p.to_string()));
        assert_eq!(some("0190a0b0-00").as_deref(), Some("0190A0B000"));
        assert_eq!(some("0190A0B0").as_deref(), Some("0190A0B0"));
        // A dash where a printed id has none, a wildcard, or one character too many.
        assert_eq!(some("0190-").as_deref(), Some("~"));
        assert_eq!(some("01%").as_deref(), Some("~"));
        assert_eq!(some("0190a0b0_").as_deref(), Some("~"));
        let id = "0190a0b0-0000-7000-8000-000000000001";
        assert_eq!(
            some(id).as_deref(),
            Some("0190A0B0000070008000000000000001")
        );
        assert_eq!(some(&format!("{id}0")).as_deref(), Some("~"));
        assert_eq!(id_prefix(&None), None);
    }
}
