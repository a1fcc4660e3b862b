//! Rows in, port records out.

use sqlx::postgres::PgRow;
use sqlx::Row;

use super::classify::Op;
use crate::driver::records::*;
use crate::error::{ErrorCode, JobError};

fn decode(operation: Op) -> impl Fn(sqlx::Error) -> JobError {
    move |e| super::classify::classify(operation, e)
}

fn non_negative(value: i32) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

/// A job row (the [`JOB_COLUMNS`](super::sql) list).
pub(crate) fn job_record(row: &PgRow) -> Result<JobRecord, JobError> {
    let d = decode(Op::DecodeJobRow);
    let state: String = row.try_get("state").map_err(&d)?;
    let progress: Option<serde_json::Value> = row.try_get("progress").map_err(&d)?;
    Ok(JobRecord {
        id: row.try_get("id").map_err(&d)?,
        run_id: row.try_get("run_id").map_err(&d)?,
        name: row.try_get("name").map_err(&d)?,
        queue: row.try_get("queue").map_err(&d)?,
        input: row.try_get("input").map_err(&d)?,
        idempotency_key: row.try_get("idempotency_key").map_err(&d)?,
        tenant_id: row.try_get("tenant_id").map_err(&d)?,
        state: JobState::parse(&state)?,
        attempt: non_negative(row.try_get("attempt").map_err(&d)?),
        max_attempts: non_negative(row.try_get("max_attempts").map_err(&d)?),
        run_at: row.try_get("run_at").map_err(&d)?,
        created_at: row.try_get("created_at").map_err(&d)?,
        updated_at: row.try_get("updated_at").map_err(&d)?,
        last_error: row.try_get("last_error").map_err(&d)?,
        last_error_code: row.try_get("last_error_code").map_err(&d)?,
        claimed_by: row.try_get("claimed_by").map_err(&d)?,
        claims: row.try_get("claims").map_err(&d)?,
        visible_at: row.try_get("visible_at").map_err(&d)?,
        progress: progress.and_then(|p| serde_json::from_value(p).ok()),
        traceparent: row.try_get("traceparent").map_err(&d)?,
    })
}

/// A step row.
pub(crate) fn step_record(row: &PgRow) -> Result<StepRecord, JobError> {
    let d = decode(Op::DecodeStepRow);
    let status: String = row.try_get("status").map_err(&d)?;
    let wait: Option<serde_json::Value> = row.try_get("wait").map_err(&d)?;
    let wait = wait
        .map(serde_json::from_value::<WaitSpec>)
        .transpose()
        .map_err(|e| {
            JobError::new(
                ErrorCode::StepRecordInvalid,
                format!(
                    "a stored wait does not parse: {}",
                    crate::error::redact_serde(&e)
                ),
            )
        })?;
    Ok(StepRecord {
        run_id: row.try_get("run_id").map_err(&d)?,
        name: row.try_get("name").map_err(&d)?,
        status: StepStatus::parse(&status)?,
        output: row.try_get("output").map_err(&d)?,
        error: row.try_get("error").map_err(&d)?,
        attempts: non_negative(row.try_get("attempts").map_err(&d)?),
        wake_at: row.try_get("wake_at").map_err(&d)?,
        wait,
        updated_at: row.try_get("updated_at").map_err(&d)?,
    })
}

/// An event row.
pub(crate) fn job_event(row: &PgRow) -> Result<JobEvent, JobError> {
    let d = decode(Op::DecodeEventRow);
    Ok(JobEvent {
        id: row.try_get("id").map_err(&d)?,
        name: row.try_get("name").map_err(&d)?,
        key: row.try_get("key").map_err(&d)?,
        payload: row.try_get("payload").map_err(&d)?,
        published_at: row.try_get("published_at").map_err(&d)?,
    })
}
