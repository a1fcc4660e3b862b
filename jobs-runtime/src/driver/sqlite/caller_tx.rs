//! Enqueue and publish in a caller's own transaction: the caller's connection arrives as
//! `&mut dyn Any` and must be a `SqliteConnection` (a `Transaction` or pooled connection derefs
//! to one); any other is refused with `X_DRIVER_UNAVAILABLE`.

use async_trait::async_trait;
use sqlx::sqlite::SqliteConnection;

use super::SqliteDriver;
use crate::driver::caller_tx::{CallerConn, CallerConnection};
use crate::driver::records::*;
use crate::error::JobError;

#[async_trait]
impl crate::driver::CallerTransaction for SqliteDriver {
    async fn job_enqueue_in(
        &self,
        conn: crate::driver::caller_tx::CallerConn<'_>,
        request: &EnqueueRequest,
    ) -> Result<EnqueueResult, JobError> {
        self.enqueue_in(own_connection(conn)?, request).await
    }

    async fn event_publish_in(
        &self,
        conn: crate::driver::caller_tx::CallerConn<'_>,
        event: &EventPublish,
    ) -> Result<EventId, JobError> {
        SqliteDriver::event_publish_in(self, own_connection(conn)?, event).await
    }
}

/// The caller's connection, when it is a SQLite one.
fn own_connection(
    conn: crate::driver::caller_tx::CallerConn<'_>,
) -> Result<&mut SqliteConnection, JobError> {
    conn.downcast_mut::<SqliteConnection>()
        .ok_or_else(|| crate::driver::caller_tx::foreign_connection("sqlite", "SqliteConnection"))
}

// `&mut tx` for the transactions and connections of this driver's database.
impl CallerConnection for sqlx::SqliteConnection {
    fn connection(&mut self) -> CallerConn<'_> {
        self
    }
}

impl CallerConnection for sqlx::Transaction<'_, sqlx::Sqlite> {
    fn connection(&mut self) -> CallerConn<'_> {
        &mut **self
    }
}

impl CallerConnection for sqlx::pool::PoolConnection<sqlx::Sqlite> {
    fn connection(&mut self) -> CallerConn<'_> {
        &mut **self
    }
}
