//! Turns a `sqlx::Error` into the crate's error: a neutral code and a message with no values.

use crate::error::{ErrorCode, JobError};

/// A database failure, as the worker and the client see it: retryable `X_DRIVER`, or
/// `X_DRIVER_UNAVAILABLE` when the pool is closed, the server unreachable, or the session ended
/// by the server. Statement errors
/// keep Postgres' message, which names constraints and columns, never bound values.
pub(crate) fn classify(operation: &'static str, error: sqlx::Error) -> JobError {
    if let Some(refused) = unstorable(operation, &error) {
        return refused;
    }
    let code = match &error {
        sqlx::Error::PoolClosed | sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) => {
            ErrorCode::DriverUnavailable
        }
        // The server ended the session: a connection exception (class 08) or a shutdown,
        // a crash or a terminated backend (57P01, 57P02, 57P03).
        sqlx::Error::Database(db) if db.code().is_some_and(|c| session_ended(&c)) => {
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

fn session_ended(sqlstate: &str) -> bool {
    sqlstate.starts_with("08") || matches!(sqlstate, "57P01" | "57P02" | "57P03")
}

/// jsonb cannot hold `\u0000` (sqlstate 22P05): no retry can ever store such a value, so it is
/// refused with the code of what carried it (terminal), not as a retryable driver failure.
fn unstorable(operation: &'static str, error: &sqlx::Error) -> Option<JobError> {
    let sqlx::Error::Database(db) = error else {
        return None;
    };
    if db.code().as_deref() != Some("22P05") {
        return None;
    }
    let code = match operation {
        "job_enqueue" | "job_enqueue_many" => ErrorCode::JobInputInvalid,
        "step_put" => ErrorCode::StepOutputUnserializable,
        "event_publish" => ErrorCode::JobEventInvalid,
        _ => return None,
    };
    Some(
        JobError::new(
            code,
            format!(
                "postgres `{operation}` cannot store the value: it holds a NUL character (\\u0000), which jsonb refuses (sqlstate 22P05)"
            ),
        )
        .with_fix("remove NUL characters (\\u0000) from the value before it is stored"),
    )
}

#[cfg(test)]
mod tests {
    use super::session_ended;

    #[test]
    fn a_session_the_server_ended_is_unavailable_not_a_statement_error() {
        for ended in ["08000", "08006", "08003", "57P01", "57P02", "57P03"] {
            assert!(session_ended(ended), "{ended}");
        }
        for statement in ["23505", "22P05", "40001", "57014", "42P01"] {
            assert!(!session_ended(statement), "{statement}");
        }
    }
}
