//! Inbound webhooks: an axum route that bounds the body, verifies the signature and its age,
//! and enqueues the delivery as a job deduped by its delivery id.
//!
//! ```no_run
//! # use jobs::prelude::*;
//! # use jobs::webhook::inbound::{InboundWebhook, WebhookReceiver};
//! #[input]
//! pub struct Received { pub delivery_id: String, pub topic: String, pub body: String }
//!
//! #[job(key = "{delivery_id}", tenant = none)]
//! async fn handle_received(_run: Run, input: Received) -> Result<(), JobError> { Ok(()) }
//!
//! # fn app(jobs: Jobs) -> Result<axum::Router, JobError> {
//! let route = WebhookReceiver::new("/hooks/billing", "whsec_...")?.router::<HandleReceived>(
//!     jobs,
//!     |hook: InboundWebhook| Received {
//!         delivery_id: hook.id,
//!         topic: hook.topic,
//!         body: String::from_utf8_lossy(&hook.body).into_owned(),
//!     },
//! );
//! # Ok(route) }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header::CONTENT_TYPE, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;

use crate::client::Jobs;
use crate::enqueue::EnqueueOptions;
use crate::error::{ErrorCode, JobError};
use crate::job::Job;

use super::signature::{verify_webhook_signature, VerifyOptions, DEFAULT_TOLERANCE};

/// The largest body a receiver reads by default (1 MiB).
pub const DEFAULT_MAX_BYTES: usize = 1024 * 1024;

/// A verified delivery, handed to the app's mapping into its job's input.
#[derive(Clone, PartialEq, Eq)]
pub struct InboundWebhook {
    /// The delivery (event) id: the job's key should be derived from it, so a redelivery
    /// dedupes onto the job the first delivery made.
    pub id: String,
    /// The topic.
    pub topic: String,
    /// The signed send time, in seconds since the epoch.
    pub timestamp: i64,
    /// The raw body, as signed.
    pub body: Vec<u8>,
}

impl fmt::Debug for InboundWebhook {
    // The body is a payload: only its length is printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InboundWebhook")
            .field("id", &self.id)
            .field("topic", &self.topic)
            .field("timestamp", &self.timestamp)
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

/// An inbound route's declaration: its path, secrets, timestamp tolerance and body bound.
#[derive(Clone)]
pub struct WebhookReceiver {
    path: String,
    secrets: Vec<Vec<u8>>,
    tolerance: Duration,
    max_bytes: usize,
}

impl fmt::Debug for WebhookReceiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookReceiver")
            .field("path", &self.path)
            .field("secrets", &self.secrets.len())
            .field("tolerance", &self.tolerance)
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

fn receiver_invalid(message: String) -> JobError {
    JobError::new(ErrorCode::WebhookReceiverInvalid, message)
}

impl WebhookReceiver {
    /// A receiver at `path` (absolute, outside `/api` and `/_x`) verifying with `secret`
    /// (`X_WEBHOOK_RECEIVER_INVALID` otherwise).
    pub fn new(path: impl Into<String>, secret: impl Into<Vec<u8>>) -> Result<Self, JobError> {
        let path = path.into();
        let secret = secret.into();
        let reserved = |prefix: &str| path == prefix || path.starts_with(&format!("{prefix}/"));
        if !path.starts_with('/') || reserved("/api") || reserved("/_x") {
            return Err(receiver_invalid(format!(
                "the webhook receiver's path `{path}` must be absolute and outside /api and /_x"
            )));
        }
        if secret.is_empty() {
            return Err(receiver_invalid(format!(
                "the webhook receiver at `{path}` has an empty secret"
            )));
        }
        Ok(WebhookReceiver {
            path,
            secrets: vec![secret],
            tolerance: DEFAULT_TOLERANCE,
            max_bytes: DEFAULT_MAX_BYTES,
        })
    }

    /// Also accepts `secret` while a secret rotates.
    pub fn also(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.secrets.push(secret.into());
        self
    }

    /// How far a signed time may be from the receiver's clock ([`DEFAULT_TOLERANCE`]).
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// The largest body read; a larger one is answered 413 (`X_WEBHOOK_RECEIVER_INVALID` for 0).
    pub fn max_bytes(mut self, max_bytes: usize) -> Result<Self, JobError> {
        if max_bytes == 0 {
            return Err(receiver_invalid(format!(
                "the webhook receiver at `{}` needs a `max_bytes` of at least 1",
                self.path
            )));
        }
        self.max_bytes = max_bytes;
        Ok(self)
    }

    /// The route's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The options `verify_webhook_signature` is called with at `now`.
    fn verify_options(&self, now: crate::clock::Timestamp) -> VerifyOptions {
        let mut options =
            VerifyOptions::new(self.secrets[0].clone(), now).tolerance(self.tolerance);
        for secret in &self.secrets[1..] {
            options = options.also(secret.clone());
        }
        options
    }

    /// An axum router with one `POST` route at the receiver's path: a body over `max_bytes`
    /// is answered 413, a bad or stale signature 401, anything else is mapped by `input` into
    /// `J`'s input and enqueued (202 with the job id; `deduped` when a live job already holds
    /// the delivery's key). The signature's age is judged on the `jobs` clock.
    pub fn router<J: Job>(
        self,
        jobs: Jobs,
        input: impl Fn(InboundWebhook) -> J::Input + Send + Sync + 'static,
    ) -> Router {
        let state = Arc::new(ReceiverState::<J> {
            receiver: self.clone(),
            jobs,
            input: Box::new(input),
        });
        Router::new()
            .route(&self.path, post(receive::<J>))
            .with_state(state)
    }
}

type MapInput<J> = Box<dyn Fn(InboundWebhook) -> <J as Job>::Input + Send + Sync>;

struct ReceiverState<J: Job> {
    receiver: WebhookReceiver,
    jobs: Jobs,
    input: MapInput<J>,
}

fn answer(status: StatusCode, body: serde_json::Value) -> Response {
    (
        status,
        [(CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn refusal(status: StatusCode, error: &JobError) -> Response {
    answer(
        status,
        serde_json::json!({
            "code": error.code().map(|c| c.as_str()),
            "message": error.message(),
        }),
    )
}

async fn receive<J: Job>(
    State(state): State<Arc<ReceiverState<J>>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let max = state.receiver.max_bytes;
    let Ok(body) = axum::body::to_bytes(body, max).await else {
        let error = JobError::new(
            ErrorCode::LimitExceeded,
            format!("the webhook body is larger than the receiver's max_bytes of {max}"),
        );
        return refusal(StatusCode::PAYLOAD_TOO_LARGE, &error);
    };
    let options = state.receiver.verify_options(state.jobs.clock().now());
    let verified = match verify_webhook_signature(&headers, &body, &options) {
        Ok(verified) => verified,
        Err(error) => return refusal(StatusCode::UNAUTHORIZED, &error),
    };
    let hook = InboundWebhook {
        id: verified.id,
        topic: verified.topic,
        timestamp: verified.timestamp,
        body: body.to_vec(),
    };
    // The job's id is derived from the receiver's path and the delivery id: a redelivery
    // answers the first delivery's job even after it finished (until retention deletes it),
    // where the input's key dedupes only while that job is live.
    let job_id = delivery_job_id(&state.receiver.path, &hook.id);
    // Direct, past a required outbox: the delivery has no business transaction to join, and
    // the sender is answered only once the job is stored.
    let options = EnqueueOptions::new().job_id(job_id).direct();
    match state
        .jobs
        .enqueue_with::<J>((state.input)(hook), options)
        .await
    {
        Ok(enqueued) => answer(
            StatusCode::ACCEPTED,
            serde_json::json!({ "job_id": enqueued.id.to_string(), "deduped": enqueued.deduped }),
        ),
        Err(error) => {
            let status = if error.class() == crate::error::ErrorClass::Terminal {
                StatusCode::UNPROCESSABLE_ENTITY
            } else {
                // The sender retries a 503 later.
                StatusCode::SERVICE_UNAVAILABLE
            };
            refusal(status, &error)
        }
    }
}

/// The job id of a delivery: the first 16 bytes of SHA-256 over the receiver's path and the
/// delivery id, as a custom (version 8) UUID, so every process answers a redelivery alike.
pub fn delivery_job_id(path: &str, delivery_id: &str) -> uuid::Uuid {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    hash.update(path.as_bytes());
    hash.update([0]);
    hash.update(delivery_id.as_bytes());
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}
