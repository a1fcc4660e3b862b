//! How the SQLite driver opens a file: WAL journal (readers never block the writer), a busy
//! timeout (a writer in another process is waited for, not failed on), `synchronous = NORMAL`
//! (a commit survives the process crashing; only a power loss can drop the last commits before
//! a checkpoint), a write-ahead log cut back to [`JOURNAL_SIZE_LIMIT`] after each checkpoint
//! that resets it, one connection that writes ([`Writer`]), so writers of this process queue
//! for it instead of in SQLite's busy handler, a pool of a few that read, and a pool of one for
//! callers' own transactions.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions, Connection};

use super::classify::{classify, Op};
use super::writer::Writer;
use crate::error::JobError;

/// How long a write waits for another process's write lock before `X_DRIVER_UNAVAILABLE`.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// What the write-ahead log is cut back to after a checkpoint resets it (`journal_size_limit`),
/// in bytes. SQLite checkpoints every 1,000 pages but never shrinks the file on its own: while
/// readers hold old snapshots a busy queue's log grew to 3-16x the database (48.6 MB beside
/// 14.8 MB after 20,000 jobs) and stayed that size.
pub const JOURNAL_SIZE_LIMIT: u64 = 16 * 1024 * 1024;

/// Connections that read; writes have their own one.
const READERS: u32 = 4;

/// How the driver reaches one database: the connection that writes, the connections that
/// read, and the pool handed to callers for transactions of their own.
pub(crate) struct Pools {
    pub writer: Writer,
    pub reader: SqlitePool,
    pub caller: SqlitePool,
}

/// The options the driver opens `url` with.
pub(crate) fn options(url: &str) -> Result<SqliteConnectOptions, JobError> {
    let options = SqliteConnectOptions::from_str(url).map_err(|e| classify(Op::Connect, e))?;
    Ok(tune(options))
}

/// The driver's settings on options of your own.
pub(crate) fn tune(options: SqliteConnectOptions) -> SqliteConnectOptions {
    options
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(DEFAULT_BUSY_TIMEOUT)
        .pragma("journal_size_limit", JOURNAL_SIZE_LIMIT.to_string())
        .foreign_keys(false)
}

/// Opens the writer now, so a file that cannot be opened or created fails here, with the
/// path's problem named; the pools connect when first used.
pub(crate) async fn pools(options: SqliteConnectOptions) -> Result<Pools, JobError> {
    let failed = |e| classify(Op::Connect, e);
    let mut writer = options.connect().await.map_err(failed)?;
    // An in-memory database (whatever the URL called it) has no file: it lives in its
    // connections, so one pooled connection does everything.
    let file: String =
        sqlx::query_scalar("select file from pragma_database_list where name = 'main'")
            .fetch_one(&mut writer)
            .await
            .map_err(failed)?;
    // No ping before each checkout: a SQLite connection is a handle on a local file, not a
    // socket that can die idle, and the ping is a round trip to the connection's worker thread.
    let pool = |connections: u32| {
        SqlitePoolOptions::new()
            .test_before_acquire(false)
            .max_connections(connections)
            .idle_timeout(None)
            .max_lifetime(None)
    };
    if file.is_empty() {
        let only = pool(1)
            .min_connections(1)
            .connect_with(options)
            .await
            .map_err(failed)?;
        let _ = writer.close().await;
        return Ok(Pools {
            writer: Writer::Pooled(only.clone()),
            reader: only.clone(),
            caller: only,
        });
    }
    Ok(Pools {
        writer: Writer::own(writer),
        reader: pool(READERS).connect_lazy_with(options.clone()),
        // One connection: a caller's transactions queue here instead of in the busy handler.
        caller: pool(1).connect_lazy_with(options),
    })
}
