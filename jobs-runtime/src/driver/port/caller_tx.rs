//! Work inside the caller's own transaction (the transactional outbox), through the port.
//!
//! A driver that can join a caller's transaction answers
//! [`JobDriver::caller_transaction`](super::JobDriver::caller_transaction) with this sub-port.
//! The caller's connection travels as `&mut dyn Any`: each driver knows its own connection
//! type (Postgres: `sqlx::PgConnection`) and refuses any other with `X_DRIVER_UNAVAILABLE`, so
//! the port names no driver, and a new driver brings its connection type without changing it.

use std::any::Any;

use async_trait::async_trait;

use super::records::{EnqueueRequest, EnqueueResult, EventId, EventPublish};
use crate::error::{ErrorCode, JobError};

/// The port's view of a caller's open connection or transaction.
pub type CallerConn<'c> = &'c mut (dyn Any + Send);

/// Enqueue and publish on a caller's connection: the job or event exists if and only if the
/// caller's transaction commits.
#[async_trait]
pub trait CallerTransaction: Send + Sync {
    /// [`JobDriver::job_enqueue`](super::JobDriver::job_enqueue) on the caller's connection.
    async fn job_enqueue_in(
        &self,
        conn: CallerConn<'_>,
        request: &EnqueueRequest,
    ) -> Result<EnqueueResult, JobError>;

    /// [`JobDriver::event_publish`](super::JobDriver::event_publish) on the caller's
    /// connection; the runs waiting on it wake once the transaction commits.
    async fn event_publish_in(
        &self,
        conn: CallerConn<'_>,
        event: &EventPublish,
    ) -> Result<EventId, JobError>;
}

/// What a caller's transaction is held in. Each driver implements it for its own connection
/// types (the SQL drivers: a `sqlx::Transaction`, a pooled connection or a bare connection of
/// their database), so `&mut tx` works; a connection of another driver's kind reaches that
/// driver's [`CallerTransaction`] and is refused there with [`foreign_connection`]'s
/// `X_DRIVER_UNAVAILABLE`.
pub trait CallerConnection: Send {
    /// The connection itself, for the driver to recognise.
    fn connection(&mut self) -> CallerConn<'_>;
}

/// The refusal of a connection of another kind than the driver's.
pub fn foreign_connection(driver: &str, expected: &str) -> JobError {
    JobError::new(
        ErrorCode::DriverUnavailable,
        format!("the {driver} driver joins a caller's `{expected}` (or a transaction on one); this connection is of another kind"),
    )
    .with_fix(format!(
        "pass the transaction (or connection) of the database this `Jobs` runs on: a `{expected}`"
    ))
}
