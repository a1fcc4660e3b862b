//! Turns a `sqlx::Error` from SQLite into the crate's error, as the Postgres driver's
//! `classify` does: a code, its retry class, and a message with no values.
//!
//! - A file that cannot be opened (`SQLITE_CANTOPEN`), or one that is not a database
//!   (`SQLITE_NOTADB`), or a malformed URL: configuration, terminal.
//! - A database locked past the busy timeout (`SQLITE_BUSY`, `SQLITE_LOCKED`), a full disk, an
//!   I/O error, a closed pool: `X_DRIVER_UNAVAILABLE` (retryable).
//! - A value too large for SQLite (`SQLITE_TOOBIG`): `X_LIMIT_EXCEEDED` (terminal).
//! - A table that is not there: `X_DRIVER_SCHEMA_MISSING` (run `migrate`).
//! - Any other failure: `X_DRIVER` (retryable), with SQLite's own message, which names
//!   constraints and columns, never bound values.

pub(crate) use crate::driver::Operation as Op;
use crate::error::{ErrorCode, JobError, StdJobError};

/// SQLite's primary result codes this module reads (the low byte of an extended code).
mod primary {
    pub const BUSY: i64 = 5;
    pub const LOCKED: i64 = 6;
    pub const IOERR: i64 = 10;
    pub const CORRUPT: i64 = 11;
    pub const FULL: i64 = 13;
    pub const CANTOPEN: i64 = 14;
    pub const TOOBIG: i64 = 18;
    pub const NOTADB: i64 = 26;
}

/// The crate's error for a failure of `operation` (a port method's name, for the message).
pub(crate) fn classify(operation: Op, error: sqlx::Error) -> JobError {
    // A row whose decoding we refused ourselves (an unknown state) keeps our code and message.
    let error = match error {
        sqlx::Error::ColumnDecode { index, source } => match source.downcast::<StdJobError>() {
            Ok(refused) => return refused.0,
            Err(source) => sqlx::Error::ColumnDecode { index, source },
        },
        other => other,
    };
    let code = match &error {
        sqlx::Error::Configuration(_) => ErrorCode::DriverUrlInvalid,
        sqlx::Error::PoolClosed | sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) => {
            ErrorCode::DriverUnavailable
        }
        sqlx::Error::Database(db) => {
            let extended = db.code().and_then(|c| c.parse::<i64>().ok()).unwrap_or(0);
            result_code(operation, extended & 0xff, db.message())
        }
        _ => ErrorCode::Driver,
    };
    let detail = match &error {
        sqlx::Error::Database(db) => format!(
            "{} (sqlite code {})",
            db.message(),
            db.code().unwrap_or_default()
        ),
        sqlx::Error::ColumnDecode { index, .. } => format!("column {index} did not decode"),
        sqlx::Error::PoolTimedOut => "no connection within the pool's acquire timeout: every \
             connection of the pool is busy"
            .to_string(),
        // The URL's path is the user's, not a secret, but keep the parser's words only.
        sqlx::Error::Configuration(cause) => format!("the database URL is malformed: {cause}"),
        other => other.to_string(),
    };
    JobError::new(code, format!("sqlite `{operation}` failed: {detail}"))
}

/// The code a SQLite result code says more precisely than `X_DRIVER`.
fn result_code(operation: Op, primary: i64, message: &str) -> ErrorCode {
    match primary {
        primary::BUSY | primary::LOCKED | primary::IOERR | primary::FULL => {
            ErrorCode::DriverUnavailable
        }
        primary::CANTOPEN | primary::NOTADB | primary::CORRUPT => ErrorCode::DriverUrlInvalid,
        primary::TOOBIG => ErrorCode::LimitExceeded,
        // SQLITE_ERROR carries "no such table" for a database never migrated.
        1 if message.starts_with("no such table") && !operation.migrates() => {
            ErrorCode::DriverSchemaMissing
        }
        _ => ErrorCode::Driver,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;

    #[test]
    fn a_locked_database_is_retryable_and_an_unopenable_file_is_not() {
        assert_eq!(
            result_code(Op::JobClaim, primary::BUSY, "database is locked"),
            ErrorCode::DriverUnavailable
        );
        assert_eq!(ErrorCode::DriverUnavailable.class(), ErrorClass::Retryable);
        let unopenable = result_code(Op::Connect, primary::CANTOPEN, "unable to open");
        assert_eq!(unopenable, ErrorCode::DriverUrlInvalid);
        assert_eq!(unopenable.class(), ErrorClass::Terminal);
        assert_eq!(
            result_code(Op::JobGet, 1, "no such table: x_jobs"),
            ErrorCode::DriverSchemaMissing
        );
        assert_eq!(
            result_code(Op::Migrate, 1, "no such table: x_jobs"),
            ErrorCode::Driver
        );
    }
}
