//! A stored job as the scripts answer it (its hash's fields as pairs) into the port's
//! records, and times into the decimal microseconds every key stores.

use std::collections::HashMap;

use uuid::Uuid;

use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::driver::Operation as Op;
use crate::error::{ErrorCode, JobError};

/// A time as the store keeps it: microseconds since the epoch, in decimal.
pub(super) fn micros(at: Timestamp) -> String {
    at.timestamp_micros().to_string()
}

/// A stored time back.
pub(super) fn time(text: &str) -> Result<Timestamp, JobError> {
    text.parse::<i64>()
        .ok()
        .and_then(chrono::DateTime::from_timestamp_micros)
        .ok_or_else(|| bad("a time"))
}

fn bad(what: &str) -> JobError {
    JobError::new(
        ErrorCode::Driver,
        format!(
            "redis {}: a stored job carries {what} this driver did not write",
            Op::DecodeJobRow
        ),
    )
}

/// Pairs of (field, value) as the scripts answer a job.
pub(super) type Fields = HashMap<String, String>;

/// Reads a flat list of pairs.
pub(super) fn fields(flat: Vec<String>) -> Fields {
    let mut out = HashMap::with_capacity(flat.len() / 2);
    let mut it = flat.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.insert(k, v);
    }
    out
}

fn text<'a>(f: &'a Fields, name: &str) -> Result<&'a str, JobError> {
    f.get(name)
        .map(String::as_str)
        .ok_or_else(|| bad("no such field"))
}

fn number<T: std::str::FromStr>(f: &Fields, name: &str) -> Result<T, JobError> {
    text(f, name)?.parse().map_err(|_| bad("a number"))
}

fn id(f: &Fields, name: &str) -> Result<Uuid, JobError> {
    Uuid::parse_str(text(f, name)?).map_err(|_| bad("an id"))
}

/// The job record of a stored job's fields.
pub(super) fn job(f: &Fields) -> Result<JobRecord, JobError> {
    let state = JobState::parse(text(f, "state")?)?;
    Ok(JobRecord {
        id: id(f, "id")?,
        run_id: id(f, "run")?,
        name: text(f, "name")?.to_string(),
        queue: text(f, "queue")?.to_string(),
        input: serde_json::from_str(text(f, "input")?).map_err(|_| bad("an input"))?,
        idempotency_key: text(f, "key")?.to_string(),
        tenant_id: f.get("tenant").cloned(),
        state,
        attempt: number(f, "attempt")?,
        max_attempts: number(f, "max")?,
        run_at: time(text(f, "run_at")?)?,
        // Stored only when not the default (one field fewer per row).
        priority: match f.get("prio") {
            Some(p) => p.parse().map_err(|_| bad("a priority"))?,
            None => DEFAULT_PRIORITY,
        },
        created_at: time(text(f, "created")?)?,
        updated_at: time(text(f, "updated")?)?,
        last_error: f.get("err").cloned(),
        last_error_code: f.get("errc").cloned(),
        claimed_by: f.get("by").cloned(),
        claims: number(f, "claims")?,
        // A row keeps its last lease's `vis` when it settles (one write fewer per ack): only a
        // running row's is its visibility.
        visible_at: match state {
            JobState::Running => f.get("vis").map(|v| time(v)).transpose()?,
            _ => None,
        },
        progress: f
            .get("prog")
            .map(|p| serde_json::from_str(p).map_err(|_| bad("a progress")))
            .transpose()?,
        traceparent: f.get("tp").cloned(),
        actor: f.get("actor").cloned(),
        // Kept while the row lives: a reader judges it against now (`holds_key`).
        unique_until: f.get("uq").map(|v| time(v)).transpose()?,
        result: f
            .get("res")
            .map(|r| serde_json::from_str(r).map_err(|_| bad("a result")))
            .transpose()?,
    })
}

/// The JSON a step record is stored as: `[record, whether it has an output]`, since a step
/// whose output is JSON `null` has one (`Some(Null)`), which the record alone would read back
/// as none.
pub(super) fn step_json(record: &StepRecord) -> Result<String, JobError> {
    serde_json::to_string(&(record, record.output.is_some())).map_err(|_| bad("a step"))
}

/// A stored step record back.
pub(super) fn step(json: &str) -> Result<StepRecord, JobError> {
    let (mut record, has_output): (StepRecord, bool) =
        serde_json::from_str(json).map_err(|_| {
            JobError::new(
                ErrorCode::StepRecordInvalid,
                format!("redis {}: a stored step did not decode", Op::DecodeStepRow),
            )
        })?;
    if has_output && record.output.is_none() {
        record.output = Some(serde_json::Value::Null);
    }
    Ok(record)
}
