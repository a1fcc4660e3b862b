//! The one connection every write of the driver goes through, in turn.
//!
//! It is held by the driver itself, behind an async mutex, not checked out of a pool: sqlx's pool
//! pings every connection it takes back (a second trip to the connection's thread, in a task
//! spawned for it), and with one writer the next write waits for that ping. A single enqueue is
//! one statement, so the ping doubled its trips. The mutex queues this process's writers as the
//! pool did; a write of another process, or of a caller's transaction on
//! [`SqliteDriver::pool`](super::SqliteDriver::pool), is waited for in SQLite's busy handler.
//!
//! An in-memory database (`sqlite::memory:`) lives in its connections, so there the driver
//! keeps writing (and reading) through the one pooled connection that [`SqliteDriver::pool`]
//! hands out too.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use sqlx::pool::PoolConnection;
use sqlx::sqlite::{Sqlite, SqliteConnection, SqlitePool};
use sqlx::Connection;
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::classify::{classify, Op};
use crate::error::JobError;

/// Where the driver's writes go.
#[derive(Debug, Clone)]
pub(crate) enum Writer {
    /// A connection of the driver's own (a database file).
    Own(Arc<Mutex<Option<SqliteConnection>>>),
    /// The one pooled connection (an in-memory database).
    Pooled(SqlitePool),
}

/// A write connection, held until dropped.
pub(crate) enum WriterConn {
    Own(OwnedMutexGuard<Option<SqliteConnection>>),
    Pooled(PoolConnection<Sqlite>),
}

impl Writer {
    /// The driver's own connection, made now.
    pub(crate) fn own(conn: SqliteConnection) -> Self {
        Writer::Own(Arc::new(Mutex::new(Some(conn))))
    }

    /// Waits for the write connection (this process's earlier writes go first); a failure is
    /// classified as `operation`'s.
    ///
    /// After [`Writer::close`] the driver's own connection is gone: `X_DRIVER_UNAVAILABLE`, as
    /// for a closed pool.
    pub(crate) async fn acquire(&self, operation: Op) -> Result<WriterConn, JobError> {
        match self {
            Writer::Own(conn) => {
                let guard = conn.clone().lock_owned().await;
                if guard.is_none() {
                    return Err(classify(operation, sqlx::Error::PoolClosed));
                }
                Ok(WriterConn::Own(guard))
            }
            Writer::Pooled(pool) => pool
                .acquire()
                .await
                .map(WriterConn::Pooled)
                .map_err(|e| classify(operation, e)),
        }
    }

    /// Closes the driver's own connection once the writes before this call are done (a
    /// pooled one closes with its pool).
    pub(crate) async fn close(&self) {
        if let Writer::Own(conn) = self {
            if let Some(conn) = conn.lock().await.take() {
                // A connection that fails to close cleanly is still gone; SQLite recovers the
                // file on the next open, as after a crash.
                let _ = conn.close().await;
            }
        }
    }
}

impl Deref for WriterConn {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        match self {
            WriterConn::Own(guard) => guard.as_ref().expect("checked when acquired"),
            WriterConn::Pooled(conn) => conn,
        }
    }
}

impl DerefMut for WriterConn {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        match self {
            WriterConn::Own(guard) => guard.as_mut().expect("checked when acquired"),
            WriterConn::Pooled(conn) => conn,
        }
    }
}
