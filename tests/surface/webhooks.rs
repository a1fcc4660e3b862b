//! Outbound webhooks against a real HTTP server on 127.0.0.1 (port 0) started by each test:
//! delivery, retries, Retry-After, redirects, the private-address refusal, disabling after N
//! failures, and a drain that does not cut a request already sent. Time is the test clock.

use crate::support::hook_server;

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobs::clock::{Clock, TestClock};
use jobs::prelude::*;
use jobs::testing::TestKit;
use jobs::webhook::{
    verify_webhook_signature, HostResolver, MemoryWebhookLedger, VerifyOptions, WebhookDelivery,
    WebhookDirectory, WebhookEndpoint, WebhookEvent, WebhookLedger, WebhookOptions, WebhookSender,
    ID_HEADER, SIGNATURE_HEADER, TOPIC_HEADER,
};
use jobs::ErrorClass;

use crate::support::wait::{bounded, wait_until};
use hook_server::{HookServer, Reply};

const SECRET: &str = "whsec_test";

fn local_options() -> WebhookOptions {
    // Loopback receivers in these tests: the opt-ins a developer's machine needs.
    WebhookOptions {
        allow_private: true,
        development: true,
        ..WebhookOptions::default()
    }
}

fn sender_with(
    clock: &TestClock,
    ledger: Arc<MemoryWebhookLedger>,
    options: WebhookOptions,
) -> WebhookSender {
    WebhookSender::builder(ledger)
        .options(options)
        .clock(Arc::new(clock.clone()))
        .build()
        .unwrap()
}

fn event() -> WebhookEvent {
    WebhookEvent::json("evt_1", "order.paid", &serde_json::json!({ "order": 7 })).unwrap()
}

fn code(result: Result<impl std::fmt::Debug, JobError>) -> ErrorCode {
    let error = result.expect_err("the delivery should have failed");
    error.code().unwrap_or_else(|| panic!("no code on {error}"))
}

#[tokio::test]
async fn a_2xx_is_delivered_signed_and_recorded() {
    let server = HookServer::start(vec![Reply::status(204)]).await;
    let clock = TestClock::new();
    let ledger = Arc::new(MemoryWebhookLedger::new());
    let sender = sender_with(&clock, ledger.clone(), local_options());
    let endpoint = WebhookEndpoint::new("ep_1", server.url("/hooks?token=abc"), SECRET)
        .header("x-tenant", "acme")
        // The framework's headers win over the endpoint's.
        .header(TOPIC_HEADER, "spoofed");

    let delivered = sender.deliver(&endpoint, &event()).await.unwrap();
    assert_eq!(delivered.status, 204);
    assert_eq!(delivered.sent_at, clock.now());

    let got = server.received();
    assert_eq!(got.len(), 1);
    let request = &got[0];
    assert_eq!(request.path, "/hooks");
    assert_eq!(request.body, br#"{"order":7}"#);
    assert_eq!(request.headers[ID_HEADER], "evt_1");
    assert_eq!(request.headers[TOPIC_HEADER], "order.paid");
    assert_eq!(request.headers["x-tenant"], "acme");
    let signature = request.headers[SIGNATURE_HEADER].to_str().unwrap();
    assert!(
        signature.starts_with(&format!("t={},v1=", clock.now().timestamp())),
        "{signature}"
    );
    // A receiver holding the secret accepts it; one with another secret refuses it.
    let verified = verify_webhook_signature(
        &request.headers,
        &request.body,
        &VerifyOptions::new(SECRET, clock.now()),
    )
    .unwrap();
    assert_eq!(
        (verified.id.as_str(), verified.topic.as_str()),
        ("evt_1", "order.paid")
    );
    let refused = verify_webhook_signature(
        &request.headers,
        &request.body,
        &VerifyOptions::new("other", clock.now()),
    );
    assert_eq!(code(refused), ErrorCode::WebhookSignatureInvalid);

    let attempts = ledger.attempts("ep_1", 10).await.unwrap();
    assert_eq!(attempts.len(), 1);
    assert!(attempts[0].delivered);
    assert_eq!(attempts[0].status, Some(204));
}

#[tokio::test]
async fn refusals_before_the_send_send_nothing() {
    let server = HookServer::start(vec![Reply::status(200)]).await;
    let clock = TestClock::new();
    let ledger = Arc::new(MemoryWebhookLedger::new());
    let sender = sender_with(&clock, ledger.clone(), local_options());
    let ok = WebhookEndpoint::new("ep", server.url("/"), SECRET);

    let colon = WebhookEvent::new("evt:1", "order.paid", "{}");
    assert_eq!(
        code(sender.deliver(&ok, &colon).await),
        ErrorCode::WebhookEventInvalid
    );
    let control = WebhookEvent::new("evt_1", "order\npaid", "{}");
    assert_eq!(
        code(sender.deliver(&ok, &control).await),
        ErrorCode::WebhookEventInvalid
    );

    let no_secret = WebhookEndpoint::new("ep", server.url("/"), "");
    assert_eq!(
        code(sender.deliver(&no_secret, &event()).await),
        ErrorCode::WebhookEndpointInvalid
    );
    // An id every store keeps alike: no control character (a NUL Postgres would refuse).
    let nul_id = WebhookEndpoint::new("ep\u{0}", server.url("/"), SECRET);
    assert_eq!(
        code(sender.deliver(&nul_id, &event()).await),
        ErrorCode::WebhookEndpointInvalid
    );
    let ftp = WebhookEndpoint::new("ep", "ftp://127.0.0.1/x", SECRET);
    assert_eq!(
        code(sender.deliver(&ftp, &event()).await),
        ErrorCode::WebhookEndpointInvalid
    );
    // Outside development only https:// is sent to.
    let production = sender_with(
        &clock,
        ledger.clone(),
        WebhookOptions {
            allow_private: true,
            ..WebhookOptions::default()
        },
    );
    let error = production.deliver(&ok, &event()).await.unwrap_err();
    assert!(error.is(ErrorCode::WebhookEndpointInvalid), "{error}");
    assert!(error.message().contains("https://"), "{error}");

    assert!(server.received().is_empty());
    assert!(ledger.attempts("ep", 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_4xx_and_a_redirect_are_rejected_and_the_redirect_is_not_followed() {
    let server = HookServer::start(vec![
        Reply::status(302).header("location", "/elsewhere"),
        Reply::status(404),
    ])
    .await;
    let clock = TestClock::new();
    let ledger = Arc::new(MemoryWebhookLedger::new());
    let sender = sender_with(&clock, ledger.clone(), local_options());
    let endpoint = WebhookEndpoint::new("ep", server.url("/hooks?secret=1"), SECRET);

    let redirect = sender.deliver(&endpoint, &event()).await.unwrap_err();
    assert!(
        redirect.is(ErrorCode::WebhookDeliveryRejected),
        "{redirect}"
    );
    assert_eq!(redirect.class(), ErrorClass::Terminal);
    assert!(redirect.message().contains("redirect"), "{redirect}");
    // The URL in the error is cut to origin and path.
    assert!(
        redirect.message().contains(&server.url("/hooks")),
        "{redirect}"
    );
    assert!(!redirect.to_string().contains("secret=1"), "{redirect}");
    let paths: Vec<_> = server.received().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/hooks"], "the redirect was not followed");

    let missing = sender.deliver(&endpoint, &event()).await.unwrap_err();
    assert!(missing.is(ErrorCode::WebhookDeliveryRejected), "{missing}");
    let codes: Vec<_> = ledger
        .attempts("ep", 10)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.error_code)
        .collect();
    assert_eq!(
        codes,
        [
            Some("X_WEBHOOK_DELIVERY_REJECTED".to_string()),
            Some("X_WEBHOOK_DELIVERY_REJECTED".to_string())
        ]
    );
}

#[tokio::test]
async fn a_429_states_its_delay_in_seconds_or_as_an_http_date_clamped_by_max_delay() {
    let server = HookServer::start(vec![
        Reply::status(429).header("retry-after", "30"),
        // The date is read against the response's own Date, so the clocks need not agree.
        Reply::status(503)
            .header("date", "Wed, 21 Oct 2026 07:28:00 GMT")
            .header("retry-after", "Wed, 21 Oct 2026 07:30:00 GMT"),
        Reply::status(429).header("retry-after", "86400"),
        Reply::status(429).header("retry-after", "0"),
    ])
    .await;
    let clock = TestClock::new();
    let ledger = Arc::new(MemoryWebhookLedger::new());
    let options = WebhookOptions {
        max_delay: Duration::from_secs(600),
        ..local_options()
    };
    let sender = sender_with(&clock, ledger.clone(), options);
    let endpoint = WebhookEndpoint::new("ep", server.url("/"), SECRET);

    let seconds = sender.deliver(&endpoint, &event()).await.unwrap_err();
    assert!(seconds.is(ErrorCode::WebhookDeliveryThrottled), "{seconds}");
    assert_eq!(
        seconds.class(),
        ErrorClass::RetryAfter(Duration::from_secs(30))
    );
    let date = sender.deliver(&endpoint, &event()).await.unwrap_err();
    assert!(date.is(ErrorCode::WebhookDeliveryThrottled), "{date}");
    assert_eq!(
        date.class(),
        ErrorClass::RetryAfter(Duration::from_secs(120))
    );
    let clamped = sender.deliver(&endpoint, &event()).await.unwrap_err();
    assert_eq!(
        clamped.class(),
        ErrorClass::RetryAfter(Duration::from_secs(600))
    );
    // `0` is no stated delay: an ordinary failure, retried with the job's backoff.
    let unstated = sender.deliver(&endpoint, &event()).await.unwrap_err();
    assert!(unstated.is(ErrorCode::WebhookDeliveryFailed), "{unstated}");
    assert_eq!(unstated.class(), ErrorClass::Retryable);
    assert_eq!(ledger.attempts("ep", 10).await.unwrap().len(), 4);
}

// ---- through the worker -----------------------------------------------------------------

/// The app's endpoints and events, read per attempt.
#[derive(Default)]
struct Directory {
    endpoints: Mutex<HashMap<String, WebhookEndpoint>>,
    events: Mutex<HashMap<String, WebhookEvent>>,
}

#[async_trait::async_trait]
impl WebhookDirectory for Directory {
    async fn endpoint(&self, endpoint_id: &str) -> Result<Option<WebhookEndpoint>, JobError> {
        Ok(self.endpoints.lock().unwrap().get(endpoint_id).cloned())
    }
    async fn event(&self, event_id: &str) -> Result<Option<WebhookEvent>, JobError> {
        Ok(self.events.lock().unwrap().get(event_id).cloned())
    }
}

struct Hooks {
    // Set once the kit (and so its clock) exists; the worker is given the context first.
    sender: std::sync::OnceLock<WebhookSender>,
    directory: Directory,
}

#[job(key = "{endpoint_id}:{event_id}", tenant = none, retry(attempts = 3, backoff = fixed, delay = "10s", max_delay = "1h", jitter = none))]
async fn deliver_hook(run: Run, input: WebhookDelivery) -> Result<(), JobError> {
    let hooks = run.context::<Hooks>()?;
    let sender = hooks.sender.get().expect("the test set the sender");
    sender.deliver_from(&run, &hooks.directory, &input).await?;
    Ok(())
}

fn kit_with(
    options: WebhookOptions,
    configure: impl FnOnce(jobs::WorkerBuilder) -> jobs::WorkerBuilder,
) -> (TestKit, Arc<Hooks>, Arc<MemoryWebhookLedger>) {
    let ledger = Arc::new(MemoryWebhookLedger::new());
    let hooks = Arc::new(Hooks {
        sender: Default::default(),
        directory: Directory::default(),
    });
    let kit = TestKit::with_worker(|w| configure(w.context(hooks.clone())));
    // The sender signs with the kit's clock, which the worker also runs on.
    let sender = WebhookSender::builder(ledger.clone())
        .options(options)
        .clock(Arc::new(kit.clock().clone()))
        .build()
        .unwrap();
    assert!(hooks.sender.set(sender).is_ok());
    (kit, hooks, ledger)
}

fn delivery(endpoint_id: &str, event_id: &str) -> WebhookDelivery {
    WebhookDelivery {
        tenant: None,
        endpoint_id: endpoint_id.into(),
        event_id: event_id.into(),
    }
}

#[tokio::test]
async fn a_5xx_then_success_retries_and_delivers() {
    let server = HookServer::start(vec![
        Reply::status(503),
        Reply::status(500),
        Reply::status(200),
    ])
    .await;
    let (kit, hooks, ledger) = kit_with(local_options(), |w| w);
    hooks.directory.endpoints.lock().unwrap().insert(
        "ep".into(),
        WebhookEndpoint::new("ep", server.url("/in"), SECRET),
    );
    hooks
        .directory
        .events
        .lock()
        .unwrap()
        .insert("evt_1".into(), event());

    let row = kit.run::<DeliverHook>(delivery("ep", "evt_1")).await;
    assert_eq!(row.state, JobState::Done, "{:?}", row.last_error);
    assert_eq!(row.attempt, 3);
    assert_eq!(server.received().len(), 3);
    let attempts = ledger.attempts("ep", 10).await.unwrap();
    let delivered: Vec<_> = attempts
        .iter()
        .rev()
        .map(|a| (a.status, a.delivered))
        .collect();
    assert_eq!(
        delivered,
        [(Some(503), false), (Some(500), false), (Some(200), true)]
    );
    assert_eq!(ledger.standing("ep").await.unwrap().consecutive_failures, 0);
    // The endpoint (URL and secret) is never checkpointed: the job stored no step.
    assert!(kit.steps(row.run_id).await.is_empty());
    assert!(!row.input.to_string().contains(SECRET));
}

#[tokio::test]
async fn a_throttled_delivery_is_retried_after_the_stated_delay() {
    let server = HookServer::start(vec![
        Reply::status(429).header("retry-after", "90"),
        Reply::status(200),
    ])
    .await;
    let (kit, hooks, _ledger) = kit_with(local_options(), |w| w);
    hooks.directory.endpoints.lock().unwrap().insert(
        "ep".into(),
        WebhookEndpoint::new("ep", server.url("/"), SECRET),
    );
    hooks
        .directory
        .events
        .lock()
        .unwrap()
        .insert("evt_1".into(), event());

    let queued = kit.enqueue::<DeliverHook>(delivery("ep", "evt_1")).await;
    let start = kit.jobs().now();
    kit.run_until_idle().await;
    let row = kit.job(queued.id).await;
    assert_eq!(
        row.last_error_code.as_deref(),
        Some("X_WEBHOOK_DELIVERY_THROTTLED")
    );
    assert_eq!(
        row.run_at,
        start + chrono::Duration::seconds(90),
        "not the job's 10s backoff"
    );
    kit.run_to_completion().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
}

#[tokio::test]
async fn an_unknown_endpoint_or_event_fails_the_job_at_once() {
    let server = HookServer::start(vec![Reply::status(200)]).await;
    let (kit, hooks, _ledger) = kit_with(local_options(), |w| w);
    hooks.directory.endpoints.lock().unwrap().insert(
        "ep".into(),
        WebhookEndpoint::new("ep", server.url("/"), SECRET),
    );

    let row = kit.run::<DeliverHook>(delivery("nope", "evt_1")).await;
    assert_eq!(
        row.last_error_code.as_deref(),
        Some("X_WEBHOOK_ENDPOINT_UNKNOWN")
    );
    assert_eq!(row.attempt, 1, "terminal: not retried");
    let row = kit.run::<DeliverHook>(delivery("ep", "evt_missing")).await;
    assert_eq!(
        row.last_error_code.as_deref(),
        Some("X_WEBHOOK_EVENT_UNKNOWN")
    );
    assert_eq!(row.attempt, 1);
    assert!(server.received().is_empty());
}

#[tokio::test]
async fn an_endpoint_is_disabled_after_n_consecutive_failures_and_enabled_again_by_the_app() {
    let server = HookServer::start(vec![
        Reply::status(500),
        Reply::status(500),
        Reply::status(500),
        Reply::status(200),
    ])
    .await;
    let clock = TestClock::new();
    let ledger = Arc::new(MemoryWebhookLedger::new());
    let sender = sender_with(
        &clock,
        ledger.clone(),
        WebhookOptions {
            disable_after: 3,
            ..local_options()
        },
    );
    let endpoint = WebhookEndpoint::new("ep", server.url("/"), SECRET);

    assert_eq!(
        code(sender.deliver(&endpoint, &event()).await),
        ErrorCode::WebhookDeliveryFailed
    );
    assert_eq!(
        code(sender.deliver(&endpoint, &event()).await),
        ErrorCode::WebhookDeliveryFailed
    );
    // The third failure disables the endpoint, and its code replaces the attempt's own.
    let third = sender.deliver(&endpoint, &event()).await.unwrap_err();
    assert!(third.is(ErrorCode::WebhookEndpointDisabled), "{third}");
    assert_eq!(third.class(), ErrorClass::Terminal);
    let standing = ledger.standing("ep").await.unwrap();
    assert!(standing.disabled);
    assert_eq!(standing.consecutive_failures, 3);
    assert_eq!(
        ledger.attempts("ep", 10).await.unwrap().len(),
        3,
        "each attempt recorded before the error"
    );

    // Asked before every send: a disabled endpoint gets no request.
    assert_eq!(
        code(sender.deliver(&endpoint, &event()).await),
        ErrorCode::WebhookEndpointDisabled
    );
    assert_eq!(server.received().len(), 3);

    ledger.enable("ep").await.unwrap();
    assert_eq!(
        sender.deliver(&endpoint, &event()).await.unwrap().status,
        200
    );
    assert_eq!(server.received().len(), 4);
    assert_eq!(ledger.standing("ep").await.unwrap(), Default::default());
}

// ---- where a webhook may go -------------------------------------------------------------

/// Answers names from a table, so a test can point a name at any address without sending
/// anything to it (the filter refuses before a socket opens).
#[derive(Debug)]
struct StubResolver(HashMap<&'static str, Vec<IpAddr>>);

impl HostResolver for StubResolver {
    fn resolve(
        &self,
        host: &str,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
        let answer = self
            .0
            .get(host)
            .cloned()
            .ok_or_else(|| std::io::Error::other("no such host"));
        Box::pin(async move { answer })
    }
}

#[tokio::test]
async fn loopback_and_private_addresses_are_refused_without_allow_private() {
    let server = HookServer::start(vec![Reply::status(200)]).await;
    let clock = TestClock::new();
    let ledger = Arc::new(MemoryWebhookLedger::new());
    let stub = Arc::new(StubResolver(HashMap::from([
        ("hooks.internal.test", vec!["10.0.0.7".parse().unwrap()]),
        ("metadata.test", vec!["169.254.169.254".parse().unwrap()]),
        // A name whose every address is loopback (a rebinding answer).
        (
            "rebound.test",
            vec!["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()],
        ),
    ])));
    let public_only = WebhookOptions {
        development: true,
        ..WebhookOptions::default()
    };
    let sender = WebhookSender::builder(ledger.clone())
        .options(public_only)
        .clock(Arc::new(clock.clone()))
        .resolver(stub.clone())
        .build()
        .unwrap();

    // A literal loopback address.
    let literal = WebhookEndpoint::new("ep", server.url("/"), SECRET);
    let error = sender.deliver(&literal, &event()).await.unwrap_err();
    assert!(error.is(ErrorCode::WebhookEndpointInvalid), "{error}");
    assert!(error.message().contains("allow_private"), "{error}");
    // Names, checked on the addresses they resolve to when connecting.
    for host in ["rebound.test", "hooks.internal.test", "metadata.test"] {
        let named = WebhookEndpoint::new("ep", format!("http://{host}:{}/", server.port), SECRET);
        let error = sender.deliver(&named, &event()).await.unwrap_err();
        assert!(
            error.is(ErrorCode::WebhookEndpointInvalid),
            "{host}: {error}"
        );
        assert!(
            error
                .message()
                .contains(&format!("http://{host}:{}/", server.port)),
            "{error}"
        );
    }
    assert!(
        server.received().is_empty(),
        "nothing reached the loopback server"
    );

    // With the opt-in, the same name reaches the loopback server through the same resolver.
    let allowed = WebhookSender::builder(ledger)
        .options(local_options())
        .clock(Arc::new(clock))
        .resolver(stub)
        .build()
        .unwrap();
    let named = WebhookEndpoint::new(
        "ep",
        format!("http://rebound.test:{}/", server.port),
        SECRET,
    );
    assert_eq!(allowed.deliver(&named, &event()).await.unwrap().status, 200);
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_refused_endpoint_records_nothing_whatever_the_url_spells() {
    let server = HookServer::start(vec![Reply::status(200)]).await;
    let clock = TestClock::new();
    let ledger = Arc::new(MemoryWebhookLedger::new());
    // A name the stub answers with loopback only, refused by the resolver's filter.
    let stub = Arc::new(StubResolver(HashMap::from([(
        "loopback.test",
        vec!["127.0.0.1".parse().unwrap()],
    )])));
    let sender = WebhookSender::builder(ledger.clone())
        .options(WebhookOptions {
            development: true,
            // One counted attempt would disable the endpoint.
            disable_after: 1,
            ..WebhookOptions::default()
        })
        .clock(Arc::new(clock.clone()))
        .resolver(stub)
        .build()
        .unwrap();
    let port = server.port;
    for host in [
        "127.0.0.1",
        "localhost",
        "LOCALHOST.",
        "api.localhost",
        "[::1]",
        "loopback.test",
    ] {
        let url = format!("http://{host}:{port}/hooks");
        let endpoint = WebhookEndpoint::new("ep", url.clone(), SECRET);
        for _ in 0..2 {
            let error = sender.deliver(&endpoint, &event()).await.unwrap_err();
            assert!(
                error.is(ErrorCode::WebhookEndpointInvalid),
                "{url}: {error}"
            );
            assert!(error.message().contains("allow_private"), "{url}: {error}");
            assert_eq!(error.class(), ErrorClass::Terminal, "{url}: {error}");
        }
        assert!(
            ledger.attempts("ep", 10).await.unwrap().is_empty(),
            "{url}: a refusal recorded an attempt"
        );
        assert_eq!(
            ledger.standing("ep").await.unwrap(),
            Default::default(),
            "{url}: a refusal counted toward disable_after"
        );
    }
    assert!(server.received().is_empty(), "nothing reached the server");
}

#[tokio::test]
async fn every_delivery_names_the_library_and_its_version_as_user_agent() {
    let server = HookServer::start(vec![Reply::status(503), Reply::status(204)]).await;
    let clock = TestClock::new();
    let ledger = Arc::new(MemoryWebhookLedger::new());
    let endpoint = WebhookEndpoint::new("ep", server.url("/hooks"), SECRET);
    // The sender a test builds and the shared one a declared #[webhook] job uses.
    let sender = sender_with(&clock, ledger.clone(), local_options());
    assert_eq!(
        code(sender.deliver(&endpoint, &event()).await),
        ErrorCode::WebhookDeliveryFailed
    );
    sender.deliver(&endpoint, &event()).await.unwrap();

    let expected = format!("jobs/{}", env!("CARGO_PKG_VERSION"));
    assert_eq!(jobs::webhook::USER_AGENT, expected);
    let got = server.received();
    assert_eq!(got.len(), 2);
    for request in &got {
        assert_eq!(request.headers["user-agent"], expected.as_str());
    }
}

#[tokio::test]
async fn the_timeout_must_sit_below_the_drain_budget() {
    let options = WebhookOptions {
        timeout: Duration::from_secs(30),
        ..WebhookOptions::default()
    };
    let error = options
        .check_drain_budget(Duration::from_secs(25))
        .unwrap_err();
    assert!(error.is(ErrorCode::Invariant), "{error}");
    assert!(WebhookOptions::default()
        .check_drain_budget(Duration::from_secs(25))
        .is_ok());
}

#[tokio::test]
async fn a_drain_does_not_cut_a_request_already_sent() {
    let server = HookServer::start(vec![Reply::status(200).held()]).await;
    let deadline = Duration::from_secs(5);
    let (kit, hooks, ledger) = kit_with(local_options(), |w| w.shutdown_deadline(deadline));
    hooks.directory.endpoints.lock().unwrap().insert(
        "ep".into(),
        WebhookEndpoint::new("ep", server.url("/"), SECRET),
    );
    hooks
        .directory
        .events
        .lock()
        .unwrap()
        .insert("evt_1".into(), event());
    let queued = kit.enqueue::<DeliverHook>(delivery("ep", "evt_1")).await;

    let handle = kit.worker().start();
    wait_until("the request reached the receiver", || async {
        server.received().len() == 1
    })
    .await;
    let shutdown = tokio::spawn(handle.shutdown());
    // Past the drain deadline the job is handed back, but the POST on the wire goes on.
    wait_until("the shutdown returned", || {
        let done = shutdown.is_finished();
        if !done {
            kit.advance(deadline);
        }
        async move { done }
    })
    .await;
    let report = bounded("the shutdown report", shutdown).await.unwrap();
    assert_eq!(report.interrupted, 1);
    assert_eq!(server.answered(), 0, "the receiver has not answered yet");

    server.release();
    wait_until("the answer was recorded", || async {
        ledger
            .attempts("ep", 10)
            .await
            .unwrap()
            .iter()
            .any(|a| a.delivered)
    })
    .await;
    assert_eq!(server.answered(), 1);
    assert_eq!(
        server.received()[0].body,
        br#"{"order":7}"#,
        "the whole body arrived"
    );
    let row = kit.job(queued.id).await;
    assert_eq!(row.last_error_code.as_deref(), Some("X_DRAINING"));
}
