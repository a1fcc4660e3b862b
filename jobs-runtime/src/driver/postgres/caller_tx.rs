//! Enqueue and publish in a caller's own transaction: the caller's connection arrives as
//! `&mut dyn Any` and must be a `PgConnection` (a `Transaction` or pooled connection derefs to
//! one); any other is refused with `X_DRIVER_UNAVAILABLE`.

use async_trait::async_trait;
use sqlx::postgres::PgConnection;

use super::PostgresDriver;
use crate::driver::caller_tx::{CallerConn, CallerConnection};
use crate::driver::records::*;
use crate::error::JobError;

#[async_trait]
impl crate::driver::CallerTransaction for PostgresDriver {
    async fn job_enqueue_in(
        &self,
        conn: crate::driver::caller_tx::CallerConn<'_>,
        request: &EnqueueRequest,
    ) -> Result<EnqueueResult, JobError> {
        let conn = own_connection(conn)?;
        self.enqueue_in(conn, request).await
    }

    async fn event_publish_in(
        &self,
        conn: crate::driver::caller_tx::CallerConn<'_>,
        event: &EventPublish,
    ) -> Result<EventId, JobError> {
        let conn = own_connection(conn)?;
        PostgresDriver::event_publish_in(self, conn, event).await
    }
}

/// The caller's connection, when it is a Postgres one.
fn own_connection(
    conn: crate::driver::caller_tx::CallerConn<'_>,
) -> Result<&mut PgConnection, JobError> {
    conn.downcast_mut::<PgConnection>()
        .ok_or_else(|| crate::driver::caller_tx::foreign_connection("postgres", "PgConnection"))
}

// `&mut tx` for the transactions and connections of this driver's database.
impl CallerConnection for sqlx::PgConnection {
    fn connection(&mut self) -> CallerConn<'_> {
        self
    }
}

impl CallerConnection for sqlx::Transaction<'_, sqlx::Postgres> {
    fn connection(&mut self) -> CallerConn<'_> {
        &mut **self
    }
}

impl CallerConnection for sqlx::pool::PoolConnection<sqlx::Postgres> {
    fn connection(&mut self) -> CallerConn<'_> {
        &mut **self
    }
}
