//! Outbound delivery: ONE event to ONE endpoint per call, signed, sent once, classified, and
//! recorded in the endpoint ledger before any error is raised.
//!
//! The endpoint (URL and secret) is handed in per attempt (from the app's
//! [`WebhookDirectory`]) and never stored: no step checkpoints it and no message prints it
//! (URLs are cut to origin and path).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use reqwest::header::{HeaderName, HeaderValue, CONTENT_TYPE, DATE, RETRY_AFTER};

use crate::clock::{SharedClock, SystemClock, Timestamp};
use crate::error::{ErrorClass, ErrorCode, JobError};
use crate::run::Run;

use super::safety::{
    check_endpoint_url, private_refused, redact_url, FilteringResolver, HostResolver,
    PrivateAddressRefused, SystemResolver,
};
use super::signature::{
    check_event_field, signature_header, ID_HEADER, SIGNATURE_HEADER, TOPIC_HEADER,
};
use crate::driver::webhook_ledger::{WebhookAttempt, WebhookLedger};

/// Consecutive failed attempts after which an endpoint is disabled: roughly a day of a
/// retrying queue.
pub const DEFAULT_WEBHOOK_DISABLE_AFTER: u32 = 10;
/// How long one request may take, below the worker's default shutdown deadline (25 s) so a
/// drain lets a request already sent finish.
pub const DEFAULT_WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest `Retry-After` honoured; a longer one is clamped to it.
pub const DEFAULT_WEBHOOK_MAX_DELAY: Duration = Duration::from_secs(3600);

/// Where and how to deliver: the app's id for the endpoint, its URL and secret, and headers
/// of its own (merged under the signature headers, which win).
#[derive(Clone)]
pub struct WebhookEndpoint {
    /// The app's id for the endpoint (what the ledger keys on).
    pub id: String,
    url: String,
    secret: String,
    headers: Vec<(String, String)>,
}

impl fmt::Debug for WebhookEndpoint {
    // Neither the URL (it may carry a token) nor the secret is ever printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookEndpoint")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl WebhookEndpoint {
    /// An endpoint with its URL and signing secret.
    pub fn new(id: impl Into<String>, url: impl Into<String>, secret: impl Into<String>) -> Self {
        WebhookEndpoint {
            id: id.into(),
            url: url.into(),
            secret: secret.into(),
            headers: Vec::new(),
        }
    }

    /// Adds a header of the endpoint's own (an id and topic or signature header of the same
    /// name is replaced by the framework's).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// One event: its id, topic and body (sent as is, `application/json` unless the endpoint's
/// headers say otherwise).
#[derive(Clone)]
pub struct WebhookEvent {
    /// The event's id (1-200 characters, no `:` or control characters).
    pub id: String,
    /// The topic (same rules).
    pub topic: String,
    /// The body, signed byte for byte.
    pub body: Vec<u8>,
}

impl fmt::Debug for WebhookEvent {
    // The body is a payload: only its length is printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookEvent")
            .field("id", &self.id)
            .field("topic", &self.topic)
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

impl WebhookEvent {
    /// An event with a raw body.
    pub fn new(id: impl Into<String>, topic: impl Into<String>, body: impl Into<Vec<u8>>) -> Self {
        WebhookEvent {
            id: id.into(),
            topic: topic.into(),
            body: body.into(),
        }
    }

    /// An event whose body is `value` as JSON.
    pub fn json(
        id: impl Into<String>,
        topic: impl Into<String>,
        value: &impl serde::Serialize,
    ) -> Result<Self, JobError> {
        let body = serde_json::to_vec(value).map_err(|e| {
            JobError::new(
                ErrorCode::WebhookEventInvalid,
                format!(
                    "the webhook event's body does not serialize: {}",
                    crate::error::redact_serde(&e)
                ),
            )
        })?;
        Ok(WebhookEvent::new(id, topic, body))
    }
}

/// A delivery job's input: which event to which endpoint. Only ids: the endpoint's URL and
/// secret are read per attempt from the app's [`WebhookDirectory`] (or a `#[webhook]` fn).
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct WebhookDelivery {
    /// The endpoint's id.
    pub endpoint_id: String,
    /// The event's id.
    pub event_id: String,
    /// The tenant the delivery belongs to (`#[webhook(tenant = per_tenant)]`'s `enqueue_for`
    /// sets it); `None` for a webhook of no tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

impl WebhookDelivery {
    /// The delivery of event `event_id` to endpoint `endpoint_id`, of no tenant.
    pub fn new(endpoint_id: impl Into<String>, event_id: impl Into<String>) -> Self {
        WebhookDelivery {
            endpoint_id: endpoint_id.into(),
            event_id: event_id.into(),
            tenant: None,
        }
    }

    /// The same delivery, for `tenant`.
    pub fn for_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }
}

/// Where a delivery job reads its endpoint and event, per attempt.
#[async_trait]
pub trait WebhookDirectory: Send + Sync {
    /// The endpoint under `endpoint_id`, or `None` (`X_WEBHOOK_ENDPOINT_UNKNOWN`).
    async fn endpoint(&self, endpoint_id: &str) -> Result<Option<WebhookEndpoint>, JobError>;
    /// The event under `event_id`, or `None` (`X_WEBHOOK_EVENT_UNKNOWN`).
    async fn event(&self, event_id: &str) -> Result<Option<WebhookEvent>, JobError>;
}

/// The sender's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookOptions {
    /// Consecutive failures that disable the endpoint ([`DEFAULT_WEBHOOK_DISABLE_AFTER`]).
    pub disable_after: u32,
    /// One request's timeout; keep it below the worker's shutdown deadline.
    pub timeout: Duration,
    /// Lets hosts resolve to loopback, private, link-local and metadata addresses.
    pub allow_private: bool,
    /// Lets `http://` URLs through (development only).
    pub development: bool,
    /// The longest `Retry-After` honoured.
    pub max_delay: Duration,
}

impl Default for WebhookOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl WebhookOptions {
    /// The defaults, as a constant (what a `#[webhook]` declaration starts from).
    pub const DEFAULT: WebhookOptions = WebhookOptions {
        disable_after: DEFAULT_WEBHOOK_DISABLE_AFTER,
        timeout: DEFAULT_WEBHOOK_TIMEOUT,
        allow_private: false,
        development: false,
        max_delay: DEFAULT_WEBHOOK_MAX_DELAY,
    };

    /// Checks that a request's timeout is below a worker's drain budget (its shutdown
    /// deadline), so a drain never has to cut a request already on the wire (`X_INVARIANT`).
    pub fn check_drain_budget(&self, shutdown_deadline: Duration) -> Result<(), JobError> {
        if self.timeout < shutdown_deadline {
            return Ok(());
        }
        Err(JobError::new(
            ErrorCode::Invariant,
            format!(
                "the webhook timeout of {}s is not below the worker's shutdown deadline of {}s",
                self.timeout.as_secs_f64(),
                shutdown_deadline.as_secs_f64()
            ),
        )
        .with_fix("lower the webhook `timeout` or raise the worker's `shutdown_deadline`"))
    }
}

/// What a delivered attempt got back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookDelivered {
    /// The receiver's 2xx status.
    pub status: u16,
    /// When the request was sent (the signed time).
    pub sent_at: Timestamp,
}

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
        type Clients = Mutex<HashMap<(Duration, bool), reqwest::Client>>;
        static CLIENTS: OnceLock<Clients> = OnceLock::new();
        check_options(&self.options)?;
        let key = (self.options.timeout, self.options.allow_private);
        let mut clients = CLIENTS
            .get_or_init(Clients::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let client = match clients.get(&key) {
            Some(client) => client.clone(),
            None => {
                let client = http_client(&self.options, Arc::new(SystemResolver), 0)?;
                clients.insert(key, client.clone());
                client
            }
        };
        drop(clients);
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

/// The HTTP client a sender sends with: no redirects, the options' timeout, no proxy,
/// `resolver`'s answers filtered for private addresses, at most `idle` idle connections kept
/// per host.
fn http_client(
    options: &WebhookOptions,
    resolver: Arc<dyn HostResolver>,
    idle: usize,
) -> Result<reqwest::Client, JobError> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(idle)
        // A redirect is answered, never followed: the receiver must be the URL configured.
        .redirect(reqwest::redirect::Policy::none())
        .timeout(options.timeout)
        // A proxy would resolve the host itself, past the address filter.
        .no_proxy()
        .dns_resolver(Arc::new(FilteringResolver {
            inner: resolver,
            allow_private: options.allow_private,
        }))
        .use_rustls_tls()
        .build()
        .map_err(|e| {
            JobError::new(
                ErrorCode::Invariant,
                "the webhook HTTP client could not be built",
            )
            .with_cause(e.without_url())
        })
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
    /// `X_WEBHOOK_ENDPOINT_INVALID`, `X_WEBHOOK_ENDPOINT_DISABLED`) record nothing; every sent
    /// attempt is recorded in the ledger before its error is returned.
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

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Delivered,
    /// 5xx, 408, 425, a 429 without a delay, or no answer (`timed_out` says which).
    Failed {
        timed_out: bool,
    },
    /// A retryable status with a stated delay (clamped).
    Throttled(Duration),
    /// A redirect, never followed.
    Redirected,
    /// Another 4xx.
    Rejected,
    /// The host resolved only to private addresses.
    PrivateRefused,
}

impl Outcome {
    fn from_transport(error: &reqwest::Error) -> Outcome {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = source {
            if e.is::<PrivateAddressRefused>() {
                return Outcome::PrivateRefused;
            }
            source = e.source();
        }
        Outcome::Failed {
            timed_out: error.is_timeout(),
        }
    }

    fn into_error(
        self,
        event_id: &str,
        endpoint_id: &str,
        shown: &str,
        status: Option<u16>,
    ) -> JobError {
        let to = format!("webhook event `{event_id}` to endpoint `{endpoint_id}` at {shown}");
        let status = status.map(|s| s.to_string()).unwrap_or_default();
        match self {
            Outcome::Delivered => unreachable!("a delivered attempt has no error"),
            Outcome::Failed { timed_out: true } => JobError::new(
                ErrorCode::WebhookDeliveryFailed,
                format!("{to} got no answer within the timeout"),
            ),
            Outcome::Failed { timed_out: false } if status.is_empty() => JobError::new(
                ErrorCode::WebhookDeliveryFailed,
                format!("{to} was never answered (the connection failed)"),
            ),
            Outcome::Failed { .. } => JobError::new(
                ErrorCode::WebhookDeliveryFailed,
                format!("{to} answered {status}"),
            ),
            Outcome::Throttled(delay) => JobError::new(
                ErrorCode::WebhookDeliveryThrottled,
                format!(
                    "{to} answered {status} with Retry-After {}s",
                    delay.as_secs()
                ),
            )
            .with_class(ErrorClass::RetryAfter(delay)),
            Outcome::Redirected => JobError::new(
                ErrorCode::WebhookDeliveryRejected,
                format!("{to} answered a redirect ({status}), which is never followed"),
            ),
            Outcome::Rejected => JobError::new(
                ErrorCode::WebhookDeliveryRejected,
                format!("{to} answered {status}"),
            ),
            Outcome::PrivateRefused => private_refused(shown),
        }
    }
}

/// Classifies a receiver's answer. A retryable status (5xx, 408, 425, 429) with a positive
/// `Retry-After` (delta seconds, or an HTTP date against the response's `Date`, else `now`)
/// is throttled with that delay clamped by `max_delay`; `0` or a past date counts as unstated.
pub(crate) fn classify(
    status: u16,
    retry_after: Option<&str>,
    date: Option<&str>,
    now: Timestamp,
    max_delay: Duration,
) -> Outcome {
    match status {
        200..=299 => Outcome::Delivered,
        300..=399 => Outcome::Redirected,
        408 | 425 | 429 | 500..=599 => match retry_after.and_then(|v| stated_delay(v, date, now)) {
            Some(delay) => Outcome::Throttled(delay.min(max_delay)),
            None => Outcome::Failed { timed_out: false },
        },
        400..=499 => Outcome::Rejected,
        _ => Outcome::Failed { timed_out: false },
    }
}

fn stated_delay(value: &str, date: Option<&str>, now: Timestamp) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return (seconds > 0).then(|| Duration::from_secs(seconds));
    }
    let http_date = |text: &str| {
        DateTime::parse_from_rfc2822(text.trim())
            .ok()
            .map(|d| d.with_timezone(&Utc))
    };
    let at = http_date(value)?;
    // The receiver's own Date, so its clock and ours need not agree.
    let base = date.and_then(http_date).unwrap_or(now);
    (at - base).to_std().ok().filter(|d| !d.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn answers_are_classified_as_the_reference_does() {
        let now = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
        let max = Duration::from_secs(600);
        assert_eq!(classify(204, None, None, now, max), Outcome::Delivered);
        assert_eq!(classify(302, None, None, now, max), Outcome::Redirected);
        assert_eq!(classify(404, None, None, now, max), Outcome::Rejected);
        assert_eq!(
            classify(503, None, None, now, max),
            Outcome::Failed { timed_out: false }
        );
        assert_eq!(
            classify(429, Some("0"), None, now, max),
            Outcome::Failed { timed_out: false }
        );
        assert_eq!(
            classify(429, Some("30"), None, now, max),
            Outcome::Throttled(Duration::from_secs(30))
        );
        assert_eq!(
            classify(429, Some("86400"), None, now, max),
            Outcome::Throttled(max)
        );
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        let later = "Wed, 21 Oct 2015 07:30:00 GMT";
        assert_eq!(
            classify(503, Some(later), Some(date), now, max),
            Outcome::Throttled(Duration::from_secs(120))
        );
        // A past date is unstated.
        assert_eq!(
            classify(503, Some(date), Some(later), now, max),
            Outcome::Failed { timed_out: false }
        );
    }
}
