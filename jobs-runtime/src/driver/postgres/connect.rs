//! The first connection of [`PostgresDriver::connect`](super::PostgresDriver::connect), opened
//! on its own under a timeout, so a wrong URL or an unreachable server is reported at once and
//! by its cause, not after the pool's 30 s acquire timeout as "pool timed out" (sqlx's pool
//! keeps retrying a refused connection until then).

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::Connection;

use super::classify::{classify, Op};
use crate::error::{ErrorCode, JobError};

/// How long [`PostgresDriver::connect`](super::PostgresDriver::connect) waits for the server to
/// accept its first connection; [`PostgresDriver::connect_with_timeout`] takes another.
///
/// [`PostgresDriver::connect_with_timeout`]: super::PostgresDriver::connect_with_timeout
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens and closes one connection within `timeout`; its failure, classified, names the cause.
pub(super) async fn probe(options: &PgConnectOptions, timeout: Duration) -> Result<(), JobError> {
    let where_ = address(options);
    match tokio::time::timeout(timeout, PgConnection::connect_with(options)).await {
        Ok(Ok(conn)) => {
            // A failed goodbye is no failure of the configuration it proved.
            let _ = conn.close().await;
            Ok(())
        }
        Err(_elapsed) => Err(JobError::new(
            ErrorCode::DriverUnavailable,
            format!(
                "postgres `connect` failed: no answer from {where_} within the connect timeout of {}",
                humantime::format_duration(timeout)
            ),
        )
        .with_fix(
            "check that the server is running and reachable at that host and port (a firewall \
             dropping packets looks like this), or raise the timeout with \
             `PostgresDriver::connect_with_timeout`",
        )),
        Ok(Err(error)) => Err(refused(&where_, error)),
    }
}

/// The first connection's failure: a transport error names the address and the OS error.
fn refused(where_: &str, error: sqlx::Error) -> JobError {
    match error {
        sqlx::Error::Io(io) => JobError::new(
            ErrorCode::DriverUnavailable,
            format!("postgres `connect` failed: cannot connect to {where_}: {io}"),
        )
        .with_fix(
            "start the server, or correct the URL's host and port (a closed port answers \
             `connection refused`); `PostgresDriver::connect` does not retry: call it again \
             once the server listens there",
        ),
        sqlx::Error::Tls(tls) => JobError::new(
            ErrorCode::DriverUnavailable,
            format!("postgres `connect` failed: TLS with {where_} failed: {tls}"),
        )
        .with_fix("check the URL's `sslmode` against what the server offers"),
        other => classify(Op::Connect, other),
    }
}

/// `host:port`, or the Unix socket, as the options name it (never the user or password).
pub(super) fn address(options: &PgConnectOptions) -> String {
    match options.get_socket() {
        Some(socket) => format!(
            "the socket {} (port {})",
            socket.display(),
            options.get_port()
        ),
        None if options.get_host().contains(':') => {
            format!("[{}]:{}", options.get_host(), options.get_port())
        }
        None => format!("{}:{}", options.get_host(), options.get_port()),
    }
}
