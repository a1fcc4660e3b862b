//! How the SQLite driver opens a file: WAL journal (readers never block the writer), a busy
//! timeout (a writer in another process is waited for, not failed on), `synchronous = NORMAL`
//! (a commit survives the process crashing; only a power loss can drop the last commits before
//! a checkpoint), and two pools: one connection that writes, so writers of this process queue
//! in the pool instead of in SQLite's busy handler, and a few that read.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::classify::classify;
use crate::error::JobError;

/// How long a write waits for another process's write lock before `X_DRIVER_UNAVAILABLE`.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections that read; writes have their own one.
const READERS: u32 = 4;

/// The writer and reader pools over one database.
pub(crate) struct Pools {
    pub writer: SqlitePool,
    pub reader: SqlitePool,
}

/// The options the driver opens `url` with.
pub(crate) fn options(url: &str) -> Result<SqliteConnectOptions, JobError> {
    let options = SqliteConnectOptions::from_str(url).map_err(|e| classify("connect", e))?;
    Ok(tune(options))
}

/// The driver's settings on options of your own.
pub(crate) fn tune(options: SqliteConnectOptions) -> SqliteConnectOptions {
    options
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(DEFAULT_BUSY_TIMEOUT)
        .foreign_keys(false)
}

/// Opens both pools; the writer's first connection is made here, so a file that cannot be
/// opened or created fails now, with the path's problem named.
pub(crate) async fn pools(options: SqliteConnectOptions) -> Result<Pools, JobError> {
    let in_memory = options.get_filename().as_os_str() == ":memory:"
        || options.get_filename().as_os_str().is_empty();
    // No ping before each checkout: a SQLite connection is a handle on a local file, not a
    // socket that can die idle, and the ping is a round trip to the connection's worker thread
    // on every statement.
    let writer = SqlitePoolOptions::new()
        .test_before_acquire(false)
        .max_connections(1)
        .min_connections(1)
        // An in-memory database lives as long as its one connection.
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_with(options.clone())
        .await
        .map_err(|e| classify("connect", e))?;
    // An in-memory database is private to its connection: the writer reads too.
    let reader = if in_memory {
        writer.clone()
    } else {
        SqlitePoolOptions::new()
            .test_before_acquire(false)
            .max_connections(READERS)
            .connect_lazy_with(options)
    };
    Ok(Pools { writer, reader })
}
