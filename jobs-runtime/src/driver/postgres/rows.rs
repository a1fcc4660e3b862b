//! Rows in, port records out. The records' `sqlx::FromRow` comes from `driver/sql_rows.rs`, so every SQL
//! driver decodes them the same way; this names the operation a failed decode is reported
//! under. A stored state or status this build does not know keeps its own code
//! (`X_JOB_ROW_STATUS_UNKNOWN`, `X_STEP_RECORD_INVALID`) through `classify`.

use sqlx::postgres::PgRow;
use sqlx::FromRow;

use super::classify::{classify, Op};
use crate::driver::records::*;
use crate::error::JobError;

/// A job row (the [`JOB_COLUMNS`](super::sql) list).
pub(crate) fn job_record(row: &PgRow) -> Result<JobRecord, JobError> {
    JobRecord::from_row(row).map_err(|e| classify(Op::DecodeJobRow, e))
}

/// A step row.
pub(crate) fn step_record(row: &PgRow) -> Result<StepRecord, JobError> {
    StepRecord::from_row(row).map_err(|e| classify(Op::DecodeStepRow, e))
}

/// An event row.
pub(crate) fn job_event(row: &PgRow) -> Result<JobEvent, JobError> {
    JobEvent::from_row(row).map_err(|e| classify(Op::DecodeEventRow, e))
}
