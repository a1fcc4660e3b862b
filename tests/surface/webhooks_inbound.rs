//! Inbound webhooks: the axum receiver on 127.0.0.1 (port 0), posted to by the outbound
//! sender (a signature it accepts) and by a raw client (tampered, stale, oversized bodies).

use std::sync::Arc;
use std::time::Duration;

use jobs::clock::{Clock, TestClock};
use jobs::driver::MemoryDriver;
use jobs::prelude::*;
use jobs::webhook::inbound::{InboundWebhook, WebhookReceiver};
use jobs::webhook::{
    signature_header, MemoryWebhookLedger, WebhookEndpoint, WebhookEvent, WebhookOptions,
    WebhookSender, ID_HEADER, SIGNATURE_HEADER, TOPIC_HEADER,
};

use crate::support::wait::bounded;

const SECRET: &str = "whsec_inbound";

#[input]
pub struct Received {
    pub delivery_id: String,
    pub topic: String,
    pub body: String,
}

#[job(key = "{delivery_id}", tenant = none)]
async fn handle_received(_run: Run, _input: Received) -> Result<(), JobError> {
    Ok(())
}

struct Receiving {
    jobs: Jobs,
    clock: TestClock,
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiving {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn receiver(configure: impl FnOnce(WebhookReceiver) -> WebhookReceiver) -> Receiving {
    let clock = TestClock::new();
    let jobs = Jobs::with_clock(Arc::new(MemoryDriver::new()), Arc::new(clock.clone()));
    let receiver = configure(WebhookReceiver::new("/hooks/billing", SECRET).unwrap());
    let app = receiver.router::<HandleReceived>(jobs.clone(), |hook: InboundWebhook| Received {
        delivery_id: hook.id,
        topic: hook.topic,
        body: String::from_utf8_lossy(&hook.body).into_owned(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Receiving {
        jobs,
        clock,
        port,
        task,
    }
}

impl Receiving {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hooks/billing", self.port)
    }

    /// Posts `body` with the given signature header, answers the status and the JSON body.
    async fn post(&self, id: &str, signature: &str, body: &[u8]) -> (u16, serde_json::Value) {
        let response = bounded(
            "the receiver's answer",
            reqwest::Client::new()
                .post(self.url())
                .header(ID_HEADER, id)
                .header(TOPIC_HEADER, "invoice.paid")
                .header(SIGNATURE_HEADER, signature)
                .body(body.to_vec())
                .send(),
        )
        .await
        .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or_default())
    }

    async fn live_jobs(&self) -> usize {
        self.jobs
            .stats()
            .await
            .unwrap()
            .iter()
            .map(|s| s.ready)
            .sum::<u64>() as usize
    }
}

#[tokio::test]
async fn a_signed_delivery_is_enqueued_once_and_a_redelivery_dedupes() {
    let receiving = receiver(|r| r).await;
    // The outbound sender is the sending side: what it signs, the receiver accepts.
    let sender = WebhookSender::builder(Arc::new(MemoryWebhookLedger::new()))
        .options(WebhookOptions {
            allow_private: true,
            development: true,
            ..WebhookOptions::default()
        })
        .clock(Arc::new(receiving.clock.clone()))
        .build()
        .unwrap();
    let endpoint = WebhookEndpoint::new("billing", receiving.url(), SECRET);
    let event = WebhookEvent::new("dlv_1", "invoice.paid", r#"{"invoice":9}"#);
    assert_eq!(sender.deliver(&endpoint, &event).await.unwrap().status, 202);
    // The sender retries (or the provider redelivers): the same delivery id runs once.
    assert_eq!(sender.deliver(&endpoint, &event).await.unwrap().status, 202);

    let t = receiving.clock.now().timestamp();
    let signature = signature_header(
        SECRET.as_bytes(),
        t,
        "dlv_1",
        "invoice.paid",
        br#"{"invoice":9}"#,
    );
    let (status, body) = receiving
        .post("dlv_1", &signature, br#"{"invoice":9}"#)
        .await;
    assert_eq!(status, 202);
    assert_eq!(body["deduped"], true);
    assert_eq!(receiving.live_jobs().await, 1);
}

#[tokio::test]
async fn a_redelivery_after_the_job_finished_runs_nothing_again() {
    let receiving = receiver(|r| r).await;
    let body = br#"{"invoice":11}"#;
    let t = receiving.clock.now().timestamp();
    let signature = signature_header(SECRET.as_bytes(), t, "dlv_9", "invoice.paid", body);
    let (status, first) = receiving.post("dlv_9", &signature, body).await;
    assert_eq!((status, first["deduped"].as_bool()), (202, Some(false)));
    // The job runs and finishes: its key is free again.
    let worker = receiving.jobs.worker().build().unwrap();
    worker.tick().await.unwrap();
    assert_eq!(receiving.live_jobs().await, 0);

    // The provider delivers the same id again (it never saw our 202): the delivery's id, not
    // its key, finds the finished job, and nothing is queued.
    let (status, again) = receiving.post("dlv_9", &signature, body).await;
    assert_eq!(status, 202);
    assert_eq!(again["deduped"], true);
    assert_eq!(again["job_id"], first["job_id"]);
    assert_eq!(receiving.live_jobs().await, 0);
    assert_eq!(
        first["job_id"].as_str().unwrap(),
        jobs::webhook::inbound::delivery_job_id("/hooks/billing", "dlv_9").to_string()
    );
}

#[tokio::test]
async fn a_bad_signature_is_refused_with_401_and_enqueues_nothing() {
    let receiving = receiver(|r| r).await;
    let t = receiving.clock.now().timestamp();
    let body = br#"{"invoice":9}"#;

    let wrong_secret = signature_header(b"not-the-secret", t, "dlv_2", "invoice.paid", body);
    let (status, answer) = receiving.post("dlv_2", &wrong_secret, body).await;
    assert_eq!(status, 401);
    assert_eq!(answer["code"], "X_WEBHOOK_SIGNATURE_INVALID");

    // Signed for another body.
    let other_body = signature_header(SECRET.as_bytes(), t, "dlv_2", "invoice.paid", b"{}");
    let (status, answer) = receiving.post("dlv_2", &other_body, body).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (401, Some("X_WEBHOOK_SIGNATURE_INVALID"))
    );

    let (status, answer) = receiving.post("dlv_2", "garbage", body).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (401, Some("X_WEBHOOK_SIGNATURE_INVALID"))
    );
    assert_eq!(receiving.live_jobs().await, 0);
}

#[tokio::test]
async fn a_stale_timestamp_is_refused_with_401() {
    let receiving = receiver(|r| r.tolerance(Duration::from_secs(300))).await;
    let body = br#"{"invoice":9}"#;
    let signed_at = receiving.clock.now().timestamp();
    let signature = signature_header(SECRET.as_bytes(), signed_at, "dlv_3", "invoice.paid", body);
    // A replay six minutes later.
    receiving.clock.advance(Duration::from_secs(360));
    let (status, answer) = receiving.post("dlv_3", &signature, body).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (401, Some("X_WEBHOOK_SIGNATURE_STALE"))
    );
    assert_eq!(receiving.live_jobs().await, 0);
}

#[tokio::test]
async fn an_oversized_body_is_refused_with_413() {
    let receiving = receiver(|r| r.max_bytes(64).unwrap()).await;
    let body = vec![b'x'; 4096];
    let signature = signature_header(
        SECRET.as_bytes(),
        receiving.clock.now().timestamp(),
        "dlv_4",
        "invoice.paid",
        &body,
    );
    let (status, answer) = receiving.post("dlv_4", &signature, &body).await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (413, Some("X_LIMIT_EXCEEDED"))
    );
    assert_eq!(receiving.live_jobs().await, 0);
}

#[test]
fn a_receiver_declaration_is_checked() {
    for path in ["hooks", "/api/hooks", "/api", "/_x/hooks"] {
        let error = WebhookReceiver::new(path, SECRET).unwrap_err();
        assert!(
            error.is(ErrorCode::WebhookReceiverInvalid),
            "{path}: {error}"
        );
    }
    let error = WebhookReceiver::new("/hooks", "").unwrap_err();
    assert!(error.is(ErrorCode::WebhookReceiverInvalid), "{error}");
    let error = WebhookReceiver::new("/hooks", SECRET)
        .unwrap()
        .max_bytes(0)
        .unwrap_err();
    assert!(error.is(ErrorCode::WebhookReceiverInvalid), "{error}");
    assert!(WebhookReceiver::new("/apiary/hooks", SECRET).is_ok());
}
