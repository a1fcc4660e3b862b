//! The keyset cursor of a job list: a row's `(created_at, id)`, printed as an opaque token.

use std::fmt;

use uuid::Uuid;

use super::JobSummary;
use crate::clock::Timestamp;
use crate::driver::records::JobId;
use crate::error::{ErrorCode, JobError};

/// Where a page starts: the `(created_at, id)` of a row, in microseconds (what Postgres keeps).
///
/// Printed as `j1.<micros>.<id>`; any other text is a foreign cursor (`X_JOB_PAGE_INVALID`).
///
/// ```
/// use jobs::driver::introspect::JobCursor;
/// let c: JobCursor = "j1.1893456000000000.0190a0b0-0000-7000-8000-000000000001".parse().unwrap();
/// assert_eq!(c.to_string(), "j1.1893456000000000.0190a0b0-0000-7000-8000-000000000001");
/// assert!("page-2".parse::<JobCursor>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobCursor {
    /// `created_at` in microseconds since the epoch.
    pub created_micros: i64,
    /// The row's id.
    pub id: JobId,
}

impl JobCursor {
    /// The cursor of a row.
    pub fn of(job: &JobSummary) -> JobCursor {
        JobCursor {
            created_micros: job.created_at.timestamp_micros(),
            id: job.id,
        }
    }

    /// The cursor's `created_at`.
    pub fn created_at(&self) -> Timestamp {
        chrono::DateTime::from_timestamp_micros(self.created_micros).unwrap_or_default()
    }

    /// Reads a cursor given as `which` (`after` or `before`), refusing a foreign one.
    pub fn parse(text: &str, which: &str) -> Result<JobCursor, JobError> {
        text.parse().map_err(|()| {
            JobError::new(
                ErrorCode::JobPageInvalid,
                format!("the `{which}` cursor is not one a job list wrote"),
            )
            .with_fix("pass the `after` or `before` value of a page, unchanged")
        })
    }
}

impl fmt::Display for JobCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "j1.{}.{}", self.created_micros, self.id)
    }
}

impl std::str::FromStr for JobCursor {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let rest = s.strip_prefix("j1.").ok_or(())?;
        let (micros, id) = rest.split_once('.').ok_or(())?;
        if micros.is_empty() || !micros.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            return Err(());
        }
        let created_micros: i64 = micros.parse().map_err(|_| ())?;
        let id = Uuid::parse_str(id).map_err(|_| ())?;
        if id.to_string() != id_text(s) {
            return Err(());
        }
        chrono::DateTime::from_timestamp_micros(created_micros).ok_or(())?;
        Ok(JobCursor { created_micros, id })
    }
}

fn id_text(cursor: &str) -> &str {
    cursor.rsplit('.').next().unwrap_or_default()
}
