//! A caller's transaction: Redis has none a job could join (a `MULTI` is not the caller's SQL
//! transaction), so `enqueue_in` and `event_publish_in` are refused rather than written apart
//! from the caller's commit. The transactional outbox is the way to tie a job to a database
//! commit with a Redis queue.

use std::any::Any;

use async_trait::async_trait;

use super::RedisDriver;
use crate::driver::records::*;
use crate::driver::CallerTransaction;
use crate::error::{ErrorCode, JobError};

fn refused(what: &str) -> JobError {
    JobError::new(
        ErrorCode::NotImplemented,
        format!("the Redis store cannot {what} inside a caller's database transaction"),
    )
    .with_fix(
        "stage the job in your database's transaction with the transactional outbox \
         (`jobs.with_outbox(PostgresOutbox or SqliteOutbox, ..)`, then `enqueue_in`), whose \
         relay publishes it to Redis after the commit; see `jobs::outbox`",
    )
}

#[async_trait]
impl CallerTransaction for RedisDriver {
    async fn job_enqueue_in(
        &self,
        _conn: &mut (dyn Any + Send),
        _request: &EnqueueRequest,
    ) -> Result<EnqueueResult, JobError> {
        Err(refused("enqueue"))
    }

    async fn event_publish_in(
        &self,
        _conn: &mut (dyn Any + Send),
        _event: &EventPublish,
    ) -> Result<EventId, JobError> {
        Err(refused("publish"))
    }
}
