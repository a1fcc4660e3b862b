//! Outbound delivery: ONE event to ONE endpoint per call, signed, sent once, classified, and
//! recorded in the endpoint ledger before any error is raised.
//!
//! The endpoint (URL and secret) is handed in per attempt (from the app's
//! [`WebhookDirectory`]) and never stored: no step checkpoints it and no message prints it
//! (URLs are cut to origin and path).

use std::sync::Arc;

use reqwest::header::{HeaderName, HeaderValue, CONTENT_TYPE, DATE, RETRY_AFTER};

use crate::clock::{SharedClock, SystemClock};
use crate::driver::webhook_ledger::{WebhookAttempt, WebhookLedger};
use crate::error::{ErrorCode, JobError};
use crate::run::Run;

use super::client::{http_client, shared_client};
use super::outcome::{classify, Outcome};
use super::safety::{check_endpoint_url, redact_url, HostResolver, SystemResolver};
use super::signature::{
    check_event_field, signature_header, ID_HEADER, SIGNATURE_HEADER, TOPIC_HEADER,
};
use super::types::{
    WebhookDelivered, WebhookDelivery, WebhookDirectory, WebhookEndpoint, WebhookEvent,
    WebhookOptions,
};

/// Builds a [`WebhookSender`].
#[derive(Debug)]
pub struct WebhookSenderBuilder {
    ledger: Arc<dyn WebhookLedger>,
    options: WebhookOptions,
    clock: SharedClock,
    resolver: Arc<dyn HostResolver>,
}

impl WebhookSenderBuilder {
    /// Replaces the options.
    pub fn options(mut self, options: WebhookOptions) -> Self {
        self.options = options;
        self
    }

    /// The clock the signature's time and the ledger's times come from.
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = clock;
        self
    }

    /// The resolver asked for host names (its answers are filtered for private addresses).
    pub fn resolver(mut self, resolver: Arc<dyn HostResolver>) -> Self {
        self.resolver = resolver;
        self
    }

    /// The sender (`X_INVARIANT` for a zero timeout or `disable_after`).
    pub fn build(self) -> Result<WebhookSender, JobError> {
        check_options(&self.options)?;
        let client = http_client(&self.options, self.resolver.clone(), usize::MAX)?;
        Ok(self.with_client(client))
    }

    /// [`build`](Self::build) on the system resolver, with an HTTP client shared by every
    /// sender of this process with the same timeout and address policy: a `#[webhook]` job
    /// builds its sender per attempt, and reuses the client's TLS setup (its root store) instead
    /// of building it again. The shared client keeps no idle connection: one would belong to
    /// the runtime that opened it, and a process may run several runtimes (tests do).
    pub(crate) fn build_shared(self) -> Result<WebhookSender, JobError> {
        check_options(&self.options)?;
        let client = shared_client(&self.options)?;
        Ok(self.with_client(client))
    }

    fn with_client(self, client: reqwest::Client) -> WebhookSender {
        WebhookSender {
            inner: Arc::new(SenderInner {
                client,
                options: self.options,
                ledger: self.ledger,
                clock: self.clock,
            }),
        }
    }
}

fn check_options(options: &WebhookOptions) -> Result<(), JobError> {
    if options.disable_after == 0 || options.timeout.is_zero() {
        return Err(JobError::new(
            ErrorCode::Invariant,
            "a webhook sender needs `disable_after` >= 1 and a non-zero `timeout`",
        ));
    }
    Ok(())
}

/// Delivers webhooks: signs, sends, classifies, records. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WebhookSender {
    inner: Arc<SenderInner>,
}

#[derive(Debug)]
struct SenderInner {
    client: reqwest::Client,
    options: WebhookOptions,
    ledger: Arc<dyn WebhookLedger>,
    clock: SharedClock,
}

impl WebhookSender {
    /// A builder over `ledger`, with the default options, the system clock and resolver.
    pub fn builder(ledger: Arc<dyn WebhookLedger>) -> WebhookSenderBuilder {
        WebhookSenderBuilder {
            ledger,
            options: WebhookOptions::default(),
            clock: Arc::new(SystemClock),
            resolver: Arc::new(SystemResolver),
        }
    }

    /// The options.
    pub fn options(&self) -> &WebhookOptions {
        &self.inner.options
    }

    /// The ledger.
    pub fn ledger(&self) -> &Arc<dyn WebhookLedger> {
        &self.inner.ledger
    }

    /// A delivery job's body: reads the endpoint and the event from `directory` (this
    /// attempt's copy, never stored), then [`deliver_in`](Self::deliver_in).
    pub async fn deliver_from(
        &self,
        run: &Run,
        directory: &dyn WebhookDirectory,
        delivery: &WebhookDelivery,
    ) -> Result<WebhookDelivered, JobError> {
        let Some(endpoint) = directory.endpoint(&delivery.endpoint_id).await? else {
            return Err(JobError::new(
                ErrorCode::WebhookEndpointUnknown,
                format!("no webhook endpoint `{}`", delivery.endpoint_id),
            ));
        };
        let Some(event) = directory.event(&delivery.event_id).await? else {
            return Err(JobError::new(
                ErrorCode::WebhookEventUnknown,
                format!("no webhook event `{}`", delivery.event_id),
            ));
        };
        self.deliver_in(run, &endpoint, &event).await
    }

    /// [`deliver`](Self::deliver) from a job: a run already cancelled (drain, timeout, lost
    /// claim) sends nothing; a request already sent is never cut by the drain.
    pub async fn deliver_in(
        &self,
        run: &Run,
        endpoint: &WebhookEndpoint,
        event: &WebhookEvent,
    ) -> Result<WebhookDelivered, JobError> {
        let prepared = self.prepare(endpoint, event).await?;
        if run.is_cancelled() {
            return Err(JobError::new(
                ErrorCode::Aborted,
                format!(
                    "webhook event `{}` was not sent: the attempt was cancelled first",
                    event.id
                ),
            ));
        }
        self.send(prepared).await
    }

    /// Delivers `event` to `endpoint` once. Refusals before the send (`X_WEBHOOK_EVENT_INVALID`,
    /// `X_WEBHOOK_ENDPOINT_INVALID`, `X_WEBHOOK_ENDPOINT_DISABLED`) record nothing, whether the
    /// URL names a private address literally, names `localhost`, or names a host that resolves
    /// only to private addresses; every sent attempt is recorded in the ledger before its error
    /// is returned.
    pub async fn deliver(
        &self,
        endpoint: &WebhookEndpoint,
        event: &WebhookEvent,
    ) -> Result<WebhookDelivered, JobError> {
        let prepared = self.prepare(endpoint, event).await?;
        self.send(prepared).await
    }

    async fn prepare(
        &self,
        endpoint: &WebhookEndpoint,
        event: &WebhookEvent,
    ) -> Result<Prepared, JobError> {
        check_event_field("id", &event.id)?;
        check_event_field("topic", &event.topic)?;
        check_endpoint_id(&endpoint.id)?;
        let options = &self.inner.options;
        let url = check_endpoint_url(&endpoint.url, options.development, options.allow_private)?;
        if endpoint.secret.is_empty() {
            return Err(JobError::new(
                ErrorCode::WebhookEndpointInvalid,
                format!("webhook endpoint `{}` has an empty secret", endpoint.id),
            ));
        }
        if self.inner.ledger.is_disabled(&endpoint.id).await? {
            return Err(disabled(&endpoint.id, None));
        }
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in &endpoint.headers {
            let (Ok(name), Ok(value)) = (
                HeaderName::try_from(name.as_str()),
                HeaderValue::try_from(value.as_str()),
            ) else {
                return Err(JobError::new(
                    ErrorCode::WebhookEndpointInvalid,
                    format!(
                        "webhook endpoint `{}` has a header that is not a valid HTTP header",
                        endpoint.id
                    ),
                ));
            };
            headers.insert(name, value);
        }
        Ok(Prepared {
            endpoint_id: endpoint.id.clone(),
            shown: redact_url(&url),
            url,
            secret: endpoint.secret.clone(),
            headers,
            event: event.clone(),
        })
    }

    /// Sends on a task of its own: a body dropped by a drain's deadline does not cut a request
    /// already on the wire, and its answer is still recorded.
    async fn send(&self, prepared: Prepared) -> Result<WebhookDelivered, JobError> {
        let inner = self.inner.clone();
        match tokio::spawn(async move { inner.attempt(prepared).await }).await {
            Ok(result) => result,
            Err(join) => Err(JobError::new(
                ErrorCode::WebhookDeliveryFailed,
                "the webhook send task ended without an answer",
            )
            .with_cause(join)),
        }
    }
}

/// An attempt ready to send (the secret lives only here, for this attempt).
struct Prepared {
    endpoint_id: String,
    url: reqwest::Url,
    shown: String,
    secret: String,
    headers: reqwest::header::HeaderMap,
    event: WebhookEvent,
}

impl SenderInner {
    async fn attempt(&self, p: Prepared) -> Result<WebhookDelivered, JobError> {
        let sent_at = self.clock.now();
        let t = sent_at.timestamp();
        let mut headers = p.headers;
        // The framework's headers go in last, over any of the endpoint's with the same name.
        let signature = signature_header(
            p.secret.as_bytes(),
            t,
            &p.event.id,
            &p.event.topic,
            &p.event.body,
        );
        for (name, value) in [
            (ID_HEADER, &p.event.id),
            (TOPIC_HEADER, &p.event.topic),
            (SIGNATURE_HEADER, &signature),
        ] {
            let value = HeaderValue::try_from(value.as_str()).map_err(|_| {
                JobError::new(
                    ErrorCode::WebhookEventInvalid,
                    "the webhook event's id or topic is not a valid header value",
                )
            })?;
            headers.insert(HeaderName::from_static(name), value);
        }
        let answer = self
            .client
            .post(p.url.clone())
            .headers(headers)
            .body(p.event.body.clone())
            .send()
            .await;
        let (status, outcome) = match answer {
            Ok(response) => {
                let status = response.status().as_u16();
                let header = |name| {
                    response
                        .headers()
                        .get(name)
                        .and_then(|v: &HeaderValue| v.to_str().ok())
                        .map(str::to_string)
                };
                let retry_after = header(RETRY_AFTER);
                let date = header(DATE);
                let outcome = classify(
                    status,
                    retry_after.as_deref(),
                    date.as_deref(),
                    self.clock.now(),
                    self.options.max_delay,
                );
                (Some(status), outcome)
            }
            Err(error) => (None, Outcome::from_transport(&error)),
        };
        // Refused by the address filter before a socket opened: nothing was sent, so, like a
        // literal address refused before the send, nothing is recorded and nothing counts
        // toward `disable_after`.
        if outcome == Outcome::PrivateRefused {
            return Err(outcome.into_error(&p.event.id, &p.endpoint_id, &p.shown, status));
        }
        let error = match outcome {
            Outcome::Delivered => None,
            other => Some(other.into_error(&p.event.id, &p.endpoint_id, &p.shown, status)),
        };
        let standing = self
            .ledger
            .record(&WebhookAttempt {
                endpoint_id: p.endpoint_id.clone(),
                event_id: p.event.id.clone(),
                topic: p.event.topic.clone(),
                at: sent_at,
                status,
                delivered: error.is_none(),
                error_code: error
                    .as_ref()
                    .and_then(|e| e.code())
                    .map(|c| c.as_str().to_string()),
            })
            .await?;
        let Some(error) = error else {
            return Ok(WebhookDelivered {
                status: status.unwrap_or(200),
                sent_at,
            });
        };
        if standing.consecutive_failures >= self.options.disable_after {
            self.ledger
                .disable(&p.endpoint_id, self.clock.now())
                .await?;
            // The disabling replaces the attempt's own code, so the job is not retried into a
            // disabled endpoint.
            return Err(disabled(
                &p.endpoint_id,
                Some(standing.consecutive_failures),
            ));
        }
        Err(error)
    }
}

/// An endpoint's id is what the ledger keys on: 1-200 characters, no control characters, so
/// every store keeps it the same way (Postgres text refuses a NUL; SQLite would keep it).
fn check_endpoint_id(id: &str) -> Result<(), JobError> {
    let chars = id.chars().count();
    if chars == 0 || chars > super::MAX_EVENT_FIELD_CHARS || id.chars().any(char::is_control) {
        return Err(JobError::new(
            ErrorCode::WebhookEndpointInvalid,
            "a webhook endpoint's id must be 1-200 characters with no control characters",
        )
        .with_fix("give each endpoint a short printable id of your own (not its URL)"));
    }
    Ok(())
}

fn disabled(endpoint_id: &str, failures: Option<u32>) -> JobError {
    let message = match failures {
        Some(n) => format!(
            "webhook endpoint `{endpoint_id}` was disabled after {n} consecutive failed attempts"
        ),
        None => format!("webhook endpoint `{endpoint_id}` is disabled"),
    };
    JobError::new(ErrorCode::WebhookEndpointDisabled, message)
}
