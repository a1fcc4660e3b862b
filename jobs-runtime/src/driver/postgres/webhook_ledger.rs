//! The Postgres webhook ledger: `x_webhook_endpoints` (one row per endpoint: its failure run and
//! when it was disabled) and `x_webhook_attempts` (one row per attempt). A record is one
//! statement, so the attempt and the failure run it moves commit together.

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::Row;

use super::classify::{classify, Op};
use super::PostgresDriver;
use crate::clock::Timestamp;
use crate::driver::webhook_ledger::{
    AttemptsPurgeParams, EndpointStanding, WebhookAttempt, WebhookLedger,
};
use crate::error::JobError;

fn standing(row: &PgRow, op: Op) -> Result<EndpointStanding, JobError> {
    let failures: i32 = row.try_get(0).map_err(|e| classify(op, e))?;
    Ok(EndpointStanding {
        consecutive_failures: u32::try_from(failures).unwrap_or(0),
        disabled: row.try_get(1).map_err(|e| classify(op, e))?,
    })
}

fn attempt(row: &PgRow) -> Result<WebhookAttempt, JobError> {
    let failed = |e| classify(Op::WebhookAttempts, e);
    let status: Option<i32> = row.try_get(4).map_err(failed)?;
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
impl WebhookLedger for PostgresDriver {
    async fn standing(&self, endpoint_id: &str) -> Result<EndpointStanding, JobError> {
        let row = sqlx::query(self.sql.webhook_standing.clone())
            .bind(endpoint_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::WebhookStanding, e))?;
        row.map_or(Ok(EndpointStanding::default()), |r| {
            standing(&r, Op::WebhookStanding)
        })
    }

    async fn record(&self, a: &WebhookAttempt) -> Result<EndpointStanding, JobError> {
        let row = sqlx::query(self.sql.webhook_record.clone())
            .bind(&a.endpoint_id)
            .bind(&a.event_id)
            .bind(&a.topic)
            .bind(a.at)
            .bind(a.status.map(i32::from))
            .bind(a.delivered)
            .bind(&a.error_code)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| classify(Op::WebhookRecord, e))?;
        standing(&row, Op::WebhookRecord)
    }

    async fn disable(&self, endpoint_id: &str, at: Timestamp) -> Result<(), JobError> {
        sqlx::query(self.sql.webhook_disable.clone())
            .bind(endpoint_id)
            .bind(at)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::WebhookDisable, e))?;
        Ok(())
    }

    async fn enable(&self, endpoint_id: &str) -> Result<(), JobError> {
        sqlx::query(self.sql.webhook_enable.clone())
            .bind(endpoint_id)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::WebhookEnable, e))?;
        Ok(())
    }

    async fn attempts(
        &self,
        endpoint_id: &str,
        limit: usize,
    ) -> Result<Vec<WebhookAttempt>, JobError> {
        let rows = sqlx::query(self.sql.webhook_attempts.clone())
            .bind(endpoint_id)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::WebhookAttempts, e))?;
        rows.iter().map(attempt).collect()
    }

    async fn attempts_purge(&self, params: &AttemptsPurgeParams) -> Result<u64, JobError> {
        let done = sqlx::query(self.sql.webhook_attempts_purge.clone())
            .bind(params.before)
            .bind(i64::from(params.limit))
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::WebhookAttemptsPurge, e))?;
        Ok(done.rows_affected())
    }
}
