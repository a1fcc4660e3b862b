//! Events: publish (on a pooled connection or the caller's transaction), the mark a waiting run
//! starts from, the lookup of a matching event, and the purge of expired ones.

use sqlx::postgres::PgConnection;
use sqlx::Row;

use super::classify::{classify, Op};
use super::{rows, PostgresDriver};
use crate::clock::add;
use crate::driver::records::*;
use crate::driver::EventFindParams;
use crate::error::JobError;

impl PostgresDriver {
    /// Publishes an event on the caller's connection or transaction: it is seen, and wakes the
    /// parked runs, only if that transaction commits.
    pub async fn event_publish_in(
        &self,
        conn: &mut PgConnection,
        event: &EventPublish,
    ) -> Result<EventId, JobError> {
        let row = sqlx::query(self.sql.event_publish.clone())
            .bind(event.id)
            .bind(&event.name)
            .bind(&event.key)
            .bind(&event.payload)
            .bind(event.now)
            .bind(add(event.now, event.ttl))
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| classify(Op::EventPublish, e))?;
        // The publish makes the runs parked on it due at its `now`, which may be behind a
        // floor by the time it commits.
        self.floors.forget();
        row.try_get("id").map_err(|e| classify(Op::EventPublish, e))
    }

    pub(super) async fn publish_event(&self, event: &EventPublish) -> Result<EventId, JobError> {
        let mut conn = super::pooled::acquire(&self.pool)
            .await
            .map_err(|e| classify(Op::EventPublish, e))?;
        self.event_publish_in(&mut conn, event).await
    }

    pub(super) async fn mark_events(&self) -> Result<String, JobError> {
        sqlx::query_scalar(self.sql.event_mark.clone())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| classify(Op::EventMark, e))
    }

    pub(super) async fn find_event(
        &self,
        params: &EventFindParams<'_>,
    ) -> Result<Option<JobEvent>, JobError> {
        let EventFindParams {
            name,
            key,
            since,
            now,
        } = *params;
        let row = sqlx::query(self.sql.event_find.clone())
            .bind(name)
            .bind(key)
            .bind(&since.mark)
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::EventFind, e))?;
        row.as_ref().map(rows::job_event).transpose()
    }

    pub(super) async fn purge_events(&self, params: &EventPurgeParams) -> Result<u64, JobError> {
        let gone: i64 = sqlx::query_scalar(self.sql.event_purge.clone())
            .bind(params.now)
            .bind(i64::from(params.limit))
            .fetch_one(&self.pool)
            .await
            .map_err(|e| classify(Op::EventPurge, e))?;
        Ok(u64::try_from(gone).unwrap_or(0))
    }
}
