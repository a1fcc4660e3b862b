//! Turns a `sqlx::Error` into the crate's error: a code that says what went wrong, its retry
//! class, and a message with no values.
//!
//! - Configuration errors no retry can cure are terminal, each with its own fix: a malformed
//!   URL (`X_DRIVER_URL_INVALID`), an unknown database (`X_DRIVER_DATABASE_UNKNOWN`), a refused
//!   login (`X_DRIVER_AUTH_FAILED`), a schema without the driver's tables
//!   (`X_DRIVER_SCHEMA_MISSING`).
//! - Values Postgres can never store are terminal too (the client refuses them first, see
//!   `crate::limits`; this is the backstop): NUL in jsonb or text, an index entry too large.
//! - An unreachable server, a closed pool or a session the server ended is
//!   `X_DRIVER_UNAVAILABLE` (retryable).
//! - Any other statement failure is `X_DRIVER` (retryable), with Postgres' own message, which
//!   names constraints and columns, never bound values.

pub(crate) use crate::driver::Operation as Op;
use crate::error::{ErrorCode, JobError, StdJobError};

/// A database failure, as the worker and the client see it.
pub(crate) fn classify(operation: Op, error: sqlx::Error) -> JobError {
    // A row whose decoding we refused ourselves (an unknown state) keeps our code and message.
    let error = match error {
        sqlx::Error::ColumnDecode { index, source } => match source.downcast::<StdJobError>() {
            Ok(refused) => return refused.0,
            Err(source) => sqlx::Error::ColumnDecode { index, source },
        },
        other => other,
    };
    if let Some(refused) = unstorable(operation, &error) {
        return refused;
    }
    let code = match &error {
        sqlx::Error::Configuration(_) => ErrorCode::DriverUrlInvalid,
        sqlx::Error::PoolClosed
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_) => ErrorCode::DriverUnavailable,
        sqlx::Error::Database(db) => db
            .code()
            .and_then(|c| sqlstate_code(operation, &c))
            .unwrap_or(ErrorCode::Driver),
        _ => ErrorCode::Driver,
    };
    let detail = match &error {
        sqlx::Error::Database(db) => format!(
            "{} (sqlstate {})",
            db.message(),
            db.code().unwrap_or_default()
        ),
        sqlx::Error::ColumnDecode { index, .. } => format!("column {index} did not decode"),
        // sqlx says "pool timed out while waiting for an open connection": say why that happens.
        sqlx::Error::PoolTimedOut => "no connection within the pool's acquire timeout: the server \
             is unreachable, or every connection of the pool is busy"
            .to_string(),
        // The parser's message names the part that is wrong; the URL itself may hold a password.
        sqlx::Error::Configuration(cause) => format!("the database URL is malformed: {cause}"),
        other => other.to_string(),
    };
    let error = JobError::new(
        code,
        format!("postgres `{}` failed: {detail}", operation.name()),
    );
    match code {
        // Postgres' message names its own limit (an index entry's), not ours: name them.
        ErrorCode::LimitExceeded => error.with_fix(
            "keep keys, tenants, queues and names within the limits of `jobs::limits` (the \
             client refuses longer ones before they reach the driver)",
        ),
        _ => error,
    }
}

/// The code a SQLSTATE says more precisely than `X_DRIVER`, if any.
fn sqlstate_code(operation: Op, sqlstate: &str) -> Option<ErrorCode> {
    match sqlstate {
        // invalid_catalog_name: the URL's database does not exist.
        "3D000" => Some(ErrorCode::DriverDatabaseUnknown),
        // invalid_password, invalid_authorization_specification (an unknown role, a pg_hba
        // rejection).
        "28P01" | "28000" => Some(ErrorCode::DriverAuthFailed),
        // invalid_schema_name, undefined_table: the driver's tables are not there. The
        // migrations themselves create them, so their own failures are not this.
        "3F000" | "42P01" if !operation.migrates() => Some(ErrorCode::DriverSchemaMissing),
        // program_limit_exceeded: an index entry larger than a btree page holds.
        "54000" => Some(ErrorCode::LimitExceeded),
        // invalid byte sequence: a NUL in a text value (jsonb's is 22P05, below).
        "22021" => Some(ErrorCode::ValueUnstorable),
        // lock_not_available: a partition's DDL waited past its `lock_timeout`.
        "55P03" if operation.partitions() => Some(ErrorCode::DbLockTimeout),
        s if session_ended(s) => Some(ErrorCode::DriverUnavailable),
        _ => None,
    }
}

/// The server ended the session: a connection exception (class 08) or a shutdown, a crash or
/// a terminated backend (57P01, 57P02, 57P03).
fn session_ended(sqlstate: &str) -> bool {
    sqlstate.starts_with("08") || matches!(sqlstate, "57P01" | "57P02" | "57P03")
}

/// jsonb cannot hold `\u0000` (sqlstate 22P05): no retry can ever store such a value, so it is
/// refused with the code of what carried it (terminal), not as a retryable driver failure.
fn unstorable(operation: Op, error: &sqlx::Error) -> Option<JobError> {
    let sqlx::Error::Database(db) = error else {
        return None;
    };
    if db.code().as_deref() != Some("22P05") {
        return None;
    }
    let code = operation.stored_value()?;
    Some(
        JobError::new(
            code,
            format!(
                "postgres `{}` cannot store the value: it holds a NUL character (\\u0000), which jsonb refuses (sqlstate 22P05)",
                operation.name()
            ),
        )
        .with_fix("remove NUL characters (\\u0000) from the value before it is stored"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;

    #[test]
    fn a_session_the_server_ended_is_unavailable_not_a_statement_error() {
        for ended in ["08000", "08006", "08003", "57P01", "57P02", "57P03"] {
            assert!(session_ended(ended), "{ended}");
            assert_eq!(
                sqlstate_code(Op::JobClaim, ended),
                Some(ErrorCode::DriverUnavailable)
            );
        }
        for statement in ["23505", "22P05", "40001", "57014", "42P01"] {
            assert!(!session_ended(statement), "{statement}");
        }
    }

    #[test]
    fn configuration_sqlstates_are_terminal_each_with_its_own_code() {
        // The test server trusts every login, so a wrong password (28P01) cannot be provoked
        // there; its classification is pinned here.
        let cases = [
            ("3D000", ErrorCode::DriverDatabaseUnknown),
            ("28P01", ErrorCode::DriverAuthFailed),
            ("28000", ErrorCode::DriverAuthFailed),
            ("3F000", ErrorCode::DriverSchemaMissing),
            ("42P01", ErrorCode::DriverSchemaMissing),
            ("54000", ErrorCode::LimitExceeded),
            ("22021", ErrorCode::ValueUnstorable),
        ];
        for (sqlstate, code) in cases {
            assert_eq!(
                sqlstate_code(Op::Connect, sqlstate),
                Some(code),
                "{sqlstate}"
            );
            assert_eq!(code.class(), ErrorClass::Terminal, "{sqlstate}");
        }
        let codes: std::collections::HashSet<ErrorCode> = cases.iter().map(|(_, c)| *c).collect();
        let fixes: std::collections::HashSet<&str> = codes.iter().map(|c| c.fix()).collect();
        assert_eq!(fixes.len(), codes.len(), "each code names its own fix");
    }

    #[test]
    fn a_missing_table_while_migrating_is_not_a_missing_schema() {
        assert_eq!(sqlstate_code(Op::MigrateApply, "42P01"), None);
        assert_eq!(sqlstate_code(Op::MigrateApply, "3F000"), None);
    }

    #[test]
    fn only_an_unreachable_server_says_to_check_reachability() {
        assert!(ErrorCode::DriverUnavailable.fix().contains("reachable"));
        assert!(!ErrorCode::Driver.fix().contains("reachable"));
        let e = classify(
            Op::Connect,
            sqlx::Error::Configuration("invalid port number".into()),
        );
        assert_eq!(e.code(), Some(ErrorCode::DriverUrlInvalid));
        assert_eq!(e.class(), ErrorClass::Terminal);
        let e = classify(Op::JobClaim, sqlx::Error::PoolTimedOut);
        assert_eq!(e.code(), Some(ErrorCode::DriverUnavailable));
        assert!(e.message().contains("unreachable"), "{e}");
    }
}
