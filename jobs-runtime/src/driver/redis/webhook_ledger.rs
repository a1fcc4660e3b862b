//! The webhook ledger (`lua/webhook_ledger.lua`) in one slot of its own, `{<prefix>:hooks}`:
//! the purge deletes the oldest attempts across every endpoint, bounded, which one index in
//! the endpoints' own slot makes one script. A record stores the attempt and moves the
//! endpoint's failure run in one script, so concurrent records lose no count. An attempt is
//! kept as this driver's JSON of it (no URL, secret or body: the port's record holds none).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::codec::micros;
use super::enqueue::malformed;
use super::scripts;
use super::RedisDriver;
use crate::clock::Timestamp;
use crate::driver::webhook_ledger::{
    AttemptsPurgeParams, EndpointStanding, WebhookAttempt, WebhookLedger,
};
use crate::driver::Operation as Op;
use crate::error::{ErrorCode, JobError};

/// The digits of an attempt's number, which each stored attempt starts with.
const NUMBER_DIGITS: usize = 16;

/// An attempt as stored (its endpoint is its key's).
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    event: String,
    topic: String,
    /// When it was sent, in microseconds.
    at: i64,
    status: Option<u16>,
    delivered: bool,
    code: Option<String>,
}

impl RedisDriver {
    fn hooks(&self) -> String {
        self.keys().area("hooks")
    }

    fn endpoint_key(&self, endpoint_id: &str) -> String {
        format!("{}:e:{endpoint_id}", self.hooks())
    }
}

fn bad_attempt() -> JobError {
    JobError::new(
        ErrorCode::Driver,
        format!(
            "redis {}: a stored attempt did not decode",
            Op::WebhookAttempts
        ),
    )
}

#[async_trait]
impl WebhookLedger for RedisDriver {
    async fn standing(&self, endpoint_id: &str) -> Result<EndpointStanding, JobError> {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.endpoint_key(endpoint_id))
            .arg("fails")
            .arg("disabled");
        let (fails, disabled): (Option<u32>, Option<String>) =
            self.conn().query(Op::WebhookStanding, &cmd).await?;
        Ok(EndpointStanding {
            consecutive_failures: fails.unwrap_or(0),
            disabled: disabled.is_some(),
        })
    }

    async fn record(&self, a: &WebhookAttempt) -> Result<EndpointStanding, JobError> {
        let json = serde_json::to_string(&Stored {
            event: a.event_id.clone(),
            topic: a.topic.clone(),
            at: a.at.timestamp_micros(),
            status: a.status,
            delivered: a.delivered,
            code: a.error_code.clone(),
        })
        .map_err(|_| JobError::new(ErrorCode::Driver, "a webhook attempt did not serialize"))?;
        let mut invocation = scripts::WEBHOOK_LEDGER.key(self.hooks());
        invocation
            .arg("record")
            .arg(&a.endpoint_id)
            .arg(micros(a.at))
            .arg(if a.delivered { "1" } else { "0" })
            .arg(json);
        let (fails, disabled): (u32, u8) =
            self.conn().script(Op::WebhookRecord, &invocation).await?;
        Ok(EndpointStanding {
            consecutive_failures: fails,
            disabled: disabled == 1,
        })
    }

    async fn disable(&self, endpoint_id: &str, at: Timestamp) -> Result<(), JobError> {
        // The first disable's instant stays, as on the SQL stores.
        let mut cmd = redis::cmd("HSETNX");
        cmd.arg(self.endpoint_key(endpoint_id))
            .arg("disabled")
            .arg(micros(at));
        self.conn().query::<i64>(Op::WebhookDisable, &cmd).await?;
        Ok(())
    }

    async fn enable(&self, endpoint_id: &str) -> Result<(), JobError> {
        // The hash holds only the failure run and the disable: an absent one is the default.
        let mut cmd = redis::cmd("DEL");
        cmd.arg(self.endpoint_key(endpoint_id));
        self.conn().query::<i64>(Op::WebhookEnable, &cmd).await?;
        Ok(())
    }

    async fn attempts(
        &self,
        endpoint_id: &str,
        limit: usize,
    ) -> Result<Vec<WebhookAttempt>, JobError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut cmd = redis::cmd("ZREVRANGE");
        cmd.arg(format!("{}:a:{endpoint_id}", self.hooks()))
            .arg(0)
            .arg(limit.saturating_sub(1).min(i64::MAX as usize));
        let members: Vec<String> = self.conn().query(Op::WebhookAttempts, &cmd).await?;
        members
            .iter()
            .map(|member| {
                let json = member.get(NUMBER_DIGITS..).ok_or_else(malformed)?;
                let s: Stored = serde_json::from_str(json).map_err(|_| bad_attempt())?;
                Ok(WebhookAttempt {
                    endpoint_id: endpoint_id.to_string(),
                    event_id: s.event,
                    topic: s.topic,
                    at: chrono::DateTime::from_timestamp_micros(s.at).ok_or_else(bad_attempt)?,
                    status: s.status,
                    delivered: s.delivered,
                    error_code: s.code,
                })
            })
            .collect()
    }

    async fn attempts_purge(&self, params: &AttemptsPurgeParams) -> Result<u64, JobError> {
        let mut invocation = scripts::WEBHOOK_LEDGER.key(self.hooks());
        invocation
            .arg("purge")
            .arg(micros(params.before))
            .arg(params.limit);
        let gone: i64 = self
            .conn()
            .script(Op::WebhookAttemptsPurge, &invocation)
            .await?;
        Ok(gone.max(0) as u64)
    }
}
