//! The SQLite webhook ledger: `x_webhook_endpoints` and `x_webhook_attempts`, as on Postgres.
//! A record writes the attempt and moves the endpoint's failure run in one `BEGIN IMMEDIATE`
//! transaction, so two processes recording for one endpoint take turns and lose no count.

use async_trait::async_trait;
use sqlx::sqlite::SqliteRow;
use sqlx::{Connection, Row};

use super::classify::{classify, Op};
use super::time::ts;
use super::SqliteDriver;
use crate::clock::Timestamp;
use crate::driver::webhook_ledger::{
    AttemptsPurgeParams, EndpointStanding, WebhookAttempt, WebhookLedger,
};
use crate::error::JobError;

fn standing(row: &SqliteRow, op: Op) -> Result<EndpointStanding, JobError> {
    let failures: i64 = row.try_get(0).map_err(|e| classify(op, e))?;
    Ok(EndpointStanding {
        consecutive_failures: u32::try_from(failures).unwrap_or(0),
        disabled: row.try_get(1).map_err(|e| classify(op, e))?,
    })
}

fn attempt(row: &SqliteRow) -> Result<WebhookAttempt, JobError> {
    let failed = |e| classify(Op::WebhookAttempts, e);
    let status: Option<i64> = row.try_get(4).map_err(failed)?;
    Ok(WebhookAttempt {
        endpoint_id: row.try_get(0).map_err(failed)?,
        event_id: row.try_get(1).map_err(failed)?,
        topic: row.try_get(2).map_err(failed)?,
        at: row.try_get(3).map_err(failed)?,
        status: status.and_then(|s| u16::try_from(s).ok()),
        delivered: row.try_get(5).map_err(failed)?,
        error_code: row.try_get(6).map_err(failed)?,
    })
}

#[async_trait]
impl WebhookLedger for SqliteDriver {
    async fn standing(&self, endpoint_id: &str) -> Result<EndpointStanding, JobError> {
        let row = sqlx::query(
            "select consecutive_failures, disabled_at is not null as disabled
             from x_webhook_endpoints where endpoint_id = ?1",
        )
        .bind(endpoint_id)
        .fetch_optional(&self.reader)
        .await
        .map_err(|e| classify(Op::WebhookStanding, e))?;
        row.map_or(Ok(EndpointStanding::default()), |r| {
            standing(&r, Op::WebhookStanding)
        })
    }

    async fn record(&self, a: &WebhookAttempt) -> Result<EndpointStanding, JobError> {
        let failed = |e| classify(Op::WebhookRecord, e);
        let mut conn = self.writer.acquire(Op::WebhookRecord).await?;
        let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
        sqlx::query(
            "insert into x_webhook_attempts
                 (endpoint_id, event_id, topic, at, status, delivered, error_code)
             values (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .bind(&a.endpoint_id)
        .bind(&a.event_id)
        .bind(&a.topic)
        .bind(ts(a.at))
        .bind(a.status.map(i64::from))
        .bind(a.delivered)
        .bind(&a.error_code)
        .execute(&mut *tx)
        .await
        .map_err(failed)?;
        let row = sqlx::query(
            "insert into x_webhook_endpoints (endpoint_id, consecutive_failures, updated_at)
             values (?1, case when ?2 then 0 else 1 end, ?3)
             on conflict (endpoint_id) do update
             set consecutive_failures =
                     case when ?2 then 0 else x_webhook_endpoints.consecutive_failures + 1 end,
                 updated_at = excluded.updated_at
             returning consecutive_failures, disabled_at is not null as disabled",
        )
        .bind(&a.endpoint_id)
        .bind(a.delivered)
        .bind(ts(a.at))
        .fetch_one(&mut *tx)
        .await
        .map_err(failed)?;
        let answer = standing(&row, Op::WebhookRecord)?;
        tx.commit().await.map_err(failed)?;
        Ok(answer)
    }

    async fn disable(&self, endpoint_id: &str, at: Timestamp) -> Result<(), JobError> {
        sqlx::query(
            "insert into x_webhook_endpoints (endpoint_id, disabled_at, updated_at)
             values (?1, ?2, ?2)
             on conflict (endpoint_id) do update
             set disabled_at = coalesce(x_webhook_endpoints.disabled_at, excluded.disabled_at),
                 updated_at = excluded.updated_at",
        )
        .bind(endpoint_id)
        .bind(ts(at))
        .execute(&mut *self.writer.acquire(Op::WebhookDisable).await?)
        .await
        .map_err(|e| classify(Op::WebhookDisable, e))?;
        Ok(())
    }

    async fn enable(&self, endpoint_id: &str) -> Result<(), JobError> {
        sqlx::query(
            "update x_webhook_endpoints set consecutive_failures = 0, disabled_at = null
             where endpoint_id = ?1",
        )
        .bind(endpoint_id)
        .execute(&mut *self.writer.acquire(Op::WebhookEnable).await?)
        .await
        .map_err(|e| classify(Op::WebhookEnable, e))?;
        Ok(())
    }

    async fn attempts(
        &self,
        endpoint_id: &str,
        limit: usize,
    ) -> Result<Vec<WebhookAttempt>, JobError> {
        let rows = sqlx::query(
            "select endpoint_id, event_id, topic, at, status, delivered, error_code
             from x_webhook_attempts where endpoint_id = ?1
             order by id desc limit ?2 + 0",
        )
        .bind(endpoint_id)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.reader)
        .await
        .map_err(|e| classify(Op::WebhookAttempts, e))?;
        rows.iter().map(attempt).collect()
    }

    async fn attempts_purge(&self, params: &AttemptsPurgeParams) -> Result<u64, JobError> {
        let done = sqlx::query(
            "delete from x_webhook_attempts where id in (
                 select id from x_webhook_attempts where at < ?1 order by at limit ?2 + 0
             )",
        )
        .bind(ts(params.before))
        .bind(i64::from(params.limit))
        .execute(&mut *self.writer.acquire(Op::WebhookAttemptsPurge).await?)
        .await
        .map_err(|e| classify(Op::WebhookAttemptsPurge, e))?;
        Ok(done.rows_affected())
    }
}
