//! Turns a `sqlx::Error` into the crate's error: a neutral code and a message with no values.

use crate::error::{ErrorCode, JobError};

/// A database failure, as the worker and the client see it: retryable `X_DRIVER`, or
/// `X_DRIVER_UNAVAILABLE` when the pool is closed or the server unreachable. Statement errors
/// keep Postgres' message, which names constraints and columns, never bound values.
pub(crate) fn classify(operation: &'static str, error: sqlx::Error) -> JobError {
    let code = match &error {
        sqlx::Error::PoolClosed | sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) => {
            ErrorCode::DriverUnavailable
        }
        _ => ErrorCode::Driver,
    };
    let detail = match &error {
        sqlx::Error::Database(db) => format!(
            "{} (sqlstate {})",
            db.message(),
            db.code().unwrap_or_default()
        ),
        sqlx::Error::ColumnDecode { index, .. } => format!("column {index} did not decode"),
        other => other.to_string(),
    };
    JobError::new(code, format!("postgres `{operation}` failed: {detail}"))
}
