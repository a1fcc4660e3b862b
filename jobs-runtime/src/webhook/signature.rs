//! The webhook signature: `t=<send seconds>,v1=<hex hmac-sha256>` over
//! `v1:<t>:<event id>:<topic>:<body>`, and its verification on the receiving side.
//!
//! The timestamp sits inside the MAC, so a captured delivery cannot be replayed later with a
//! fresh timestamp; `:` is refused in ids and topics so the signed string has one reading.

use std::time::Duration;

use axum::http::HeaderMap;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::clock::Timestamp;
use crate::error::{ErrorCode, JobError};

/// The header carrying the event id.
pub const ID_HEADER: &str = "x-jobs-webhook-id";
/// The header carrying the topic.
pub const TOPIC_HEADER: &str = "x-jobs-webhook-topic";
/// The header carrying `t=<seconds>,v1=<hex>`.
pub const SIGNATURE_HEADER: &str = "x-jobs-webhook-signature";
/// The longest event id or topic, in characters.
pub const MAX_EVENT_FIELD_CHARS: usize = 200;
/// How far a signed timestamp may be from the receiver's clock before it is stale.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(5 * 60);

type HmacSha256 = Hmac<Sha256>;

/// Checks an event id or topic: 1-200 characters, no `:` and no control character
/// (`X_WEBHOOK_EVENT_INVALID`). `what` names the field in the message; the value is not quoted.
pub fn check_event_field(what: &str, value: &str) -> Result<(), JobError> {
    let chars = value.chars().count();
    let problem = if chars == 0 {
        "is empty"
    } else if chars > MAX_EVENT_FIELD_CHARS {
        "is longer than 200 characters"
    } else if value.contains(':') {
        "holds a `:`"
    } else if value.chars().any(char::is_control) {
        "holds a control character"
    } else {
        return Ok(());
    };
    Err(JobError::new(
        ErrorCode::WebhookEventInvalid,
        format!("the webhook event's {what} {problem}: the signed string would be ambiguous"),
    ))
}

fn mac(secret: &[u8], timestamp: i64, id: &str, topic: &str, body: &[u8]) -> HmacSha256 {
    // HMAC takes a key of any length, so this never fails.
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("hmac accepts keys of every length"));
    mac.update(format!("v1:{timestamp}:{id}:{topic}:").as_bytes());
    mac.update(body);
    mac
}

/// The hex HMAC-SHA256 of `v1:<timestamp>:<id>:<topic>:<body>` under `secret`.
pub fn sign(secret: &[u8], timestamp: i64, id: &str, topic: &str, body: &[u8]) -> String {
    hex::encode(
        mac(secret, timestamp, id, topic, body)
            .finalize()
            .into_bytes(),
    )
}

/// The signature header's value, `t=<timestamp>,v1=<hex>`.
///
/// ```
/// let header = jobs::webhook::signature_header(b"whsec", 1_700_000_000, "evt_1", "order.paid", b"{}");
/// assert!(header.starts_with("t=1700000000,v1="));
/// ```
pub fn signature_header(
    secret: &[u8],
    timestamp: i64,
    id: &str,
    topic: &str,
    body: &[u8],
) -> String {
    format!(
        "t={timestamp},v1={}",
        sign(secret, timestamp, id, topic, body)
    )
}

/// What a verified delivery carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedWebhook {
    /// The event (delivery) id, from the id header.
    pub id: String,
    /// The topic, from the topic header.
    pub topic: String,
    /// The signed send time, in seconds since the epoch.
    pub timestamp: i64,
}

/// How a receiver verifies: the secrets it accepts (more than one while a secret rotates),
/// the clock it compares the timestamp with, and the tolerance.
#[derive(Clone)]
pub struct VerifyOptions {
    secrets: Vec<Vec<u8>>,
    /// The receiver's now.
    pub now: Timestamp,
    /// How far the signed time may be from `now`, either way.
    pub tolerance: Duration,
}

impl std::fmt::Debug for VerifyOptions {
    // The secrets are never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyOptions")
            .field("secrets", &self.secrets.len())
            .field("now", &self.now)
            .field("tolerance", &self.tolerance)
            .finish()
    }
}

impl VerifyOptions {
    /// Verifies against `secret` at `now` with [`DEFAULT_TOLERANCE`].
    pub fn new(secret: impl Into<Vec<u8>>, now: Timestamp) -> Self {
        VerifyOptions {
            secrets: vec![secret.into()],
            now,
            tolerance: DEFAULT_TOLERANCE,
        }
    }

    /// Also accepts `secret` (the old or new one while rotating).
    pub fn also(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.secrets.push(secret.into());
        self
    }

    /// Replaces the tolerance.
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }
}

fn invalid(why: &str) -> JobError {
    JobError::new(
        ErrorCode::WebhookSignatureInvalid,
        format!("the webhook's signature was refused: {why}"),
    )
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Result<&'h str, JobError> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| invalid(&format!("the `{name}` header is missing or not text")))
}

/// Verifies a delivery's headers and raw body: the signature must match one of the secrets
/// (`X_WEBHOOK_SIGNATURE_INVALID`) and its timestamp lie within the tolerance of `now`
/// (`X_WEBHOOK_SIGNATURE_STALE`); both answer HTTP 401. The comparison is constant-time.
pub fn verify_webhook_signature(
    headers: &HeaderMap,
    body: &[u8],
    options: &VerifyOptions,
) -> Result<VerifiedWebhook, JobError> {
    let id = header(headers, ID_HEADER)?;
    let topic = header(headers, TOPIC_HEADER)?;
    let signature = header(headers, SIGNATURE_HEADER)?;
    if check_event_field("id", id).is_err() || check_event_field("topic", topic).is_err() {
        return Err(invalid(
            "the id or topic header is not a valid event id or topic",
        ));
    }
    let mut timestamp = None;
    let mut candidates = Vec::new();
    for part in signature.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", v)) => {
                if let Ok(bytes) = hex::decode(v) {
                    candidates.push(bytes);
                }
            }
            // Other schemes (a later `v2`) are skipped, so senders can add them first.
            _ => {}
        }
    }
    let Some(timestamp) = timestamp else {
        return Err(invalid("the signature header has no `t=` timestamp"));
    };
    if candidates.is_empty() {
        return Err(invalid("the signature header has no `v1=` signature"));
    }
    let matched = options.secrets.iter().any(|secret| {
        candidates.iter().any(|candidate| {
            mac(secret, timestamp, id, topic, body)
                .verify_slice(candidate)
                .is_ok()
        })
    });
    if !matched {
        return Err(invalid(
            "no `v1=` signature matches the body under the receiver's secret",
        ));
    }
    // Checked after the MAC, so an unsigned timestamp never tells an attacker anything.
    let age = (options.now.timestamp() - timestamp).unsigned_abs();
    if age > options.tolerance.as_secs() {
        return Err(JobError::new(
            ErrorCode::WebhookSignatureStale,
            format!(
                "the webhook was signed {age}s away from the receiver's clock, more than the tolerance of {}s",
                options.tolerance.as_secs()
            ),
        ));
    }
    Ok(VerifiedWebhook {
        id: id.to_string(),
        topic: topic.to_string(),
        timestamp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn signed(secret: &[u8], t: i64, body: &[u8]) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ID_HEADER, "evt_1".parse().unwrap());
        h.insert(TOPIC_HEADER, "order.paid".parse().unwrap());
        h.insert(
            SIGNATURE_HEADER,
            signature_header(secret, t, "evt_1", "order.paid", body)
                .parse()
                .unwrap(),
        );
        h
    }

    #[test]
    fn a_signed_body_verifies_and_a_changed_one_does_not() {
        let now = chrono::Utc.timestamp_opt(1_700_000_000, 0).unwrap();
        let h = signed(b"s3cret", now.timestamp(), b"{\"a\":1}");
        let ok =
            verify_webhook_signature(&h, b"{\"a\":1}", &VerifyOptions::new("s3cret", now)).unwrap();
        assert_eq!(ok.id, "evt_1");
        let e = verify_webhook_signature(&h, b"{\"a\":2}", &VerifyOptions::new("s3cret", now))
            .unwrap_err();
        assert!(e.is(ErrorCode::WebhookSignatureInvalid));
        let e = verify_webhook_signature(&h, b"{\"a\":1}", &VerifyOptions::new("other", now))
            .unwrap_err();
        assert!(e.is(ErrorCode::WebhookSignatureInvalid));
        // A rotating receiver accepts either secret.
        let rotating = VerifyOptions::new("new", now).also("s3cret");
        assert!(verify_webhook_signature(&h, b"{\"a\":1}", &rotating).is_ok());
    }

    #[test]
    fn event_fields_that_would_make_the_string_ambiguous_are_refused() {
        for bad in ["", "a:b", "a\nb", &"x".repeat(201)] {
            let e = check_event_field("topic", bad).unwrap_err();
            assert!(e.is(ErrorCode::WebhookEventInvalid));
        }
        assert!(check_event_field("topic", &"é".repeat(200)).is_ok());
    }
}
