//! `#[webhook]` declarations run by a worker on memory, Postgres and SQLite, against a real
//! HTTP server on 127.0.0.1: each attempt reads its endpoint through the declared fn, records
//! itself in the store's own endpoint ledger, a 5xx is retried, a live delivery dedupes,
//! `disable_after` failures disable the endpoint until the app enables it, loopback is refused
//! without `allow_private`, and a per-tenant webhook's delivery carries its tenant. Time is the
//! test clock.

use crate::support;
use crate::support::hook_server;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobs::clock::TestClock;
use jobs::driver::JobId;
use jobs::driver::{JobDriver, MemoryDriver, WebhookLedger};
use jobs::prelude::*;
use jobs::purge::{Purge, PurgePass, PurgeReport, DEFAULT_WEBHOOK_ATTEMPT_RETENTION};
use jobs::webhook::{
    WebhookDelivery, WebhookEndpoint, WebhookEvent, WebhookTarget, SIGNATURE_HEADER,
};
use jobs::{Registry, Worker};

use hook_server::{HookServer, Reply};

const SECRET: &str = "whsec_declared";

/// The app's own store of endpoints and events, read by every attempt.
#[derive(Default)]
struct Store {
    endpoints: Mutex<HashMap<String, WebhookEndpoint>>,
    events: Mutex<HashMap<String, WebhookEvent>>,
}

impl Store {
    fn endpoint(&self, id: &str, url: String) {
        let endpoint = WebhookEndpoint::new(id, url, SECRET);
        self.endpoints.lock().unwrap().insert(id.into(), endpoint);
    }

    fn event(&self, id: &str) {
        let event =
            WebhookEvent::json(id, "order.paid", &serde_json::json!({ "event": id })).unwrap();
        self.events.lock().unwrap().insert(id.into(), event);
    }

    fn target(&self, delivery: &WebhookDelivery) -> Result<WebhookTarget, JobError> {
        let endpoint = self
            .endpoints
            .lock()
            .unwrap()
            .get(&delivery.endpoint_id)
            .cloned();
        let event = self.events.lock().unwrap().get(&delivery.event_id).cloned();
        WebhookTarget::found(delivery, endpoint, event)
    }
}

#[webhook(
    name = "test.orders.webhook",
    tenant = none,
    allow_private = true,
    development = true,
    disable_after = 3,
    timeout = "5s",
    retry(attempts = 6, backoff = fixed, delay = "10s", jitter = none)
)]
async fn order_webhook(run: &Run, delivery: &WebhookDelivery) -> Result<WebhookTarget, JobError> {
    run.context::<Store>()?.target(delivery)
}

// No `allow_private`: a receiver on loopback is refused.
#[webhook(name = "test.strict.webhook", tenant = none, development = true)]
async fn strict_webhook(run: &Run, delivery: &WebhookDelivery) -> Result<WebhookTarget, JobError> {
    run.context::<Store>()?.target(delivery)
}

#[webhook(
    name = "test.tenant.webhook",
    tenant = per_tenant,
    allow_private = true,
    development = true
)]
async fn tenant_webhook(run: &Run, delivery: &WebhookDelivery) -> Result<WebhookTarget, JobError> {
    run.context::<Store>()?.target(delivery)
}

#[job(name = "test.webhooks.purge", key = "purge", tenant = none)]
async fn purge_attempts(run: Run, _pass: PurgePass) -> Result<PurgeReport, JobError> {
    Purge::new()
        .webhook_attempts(DEFAULT_WEBHOOK_ATTEMPT_RETENTION)
        .run(&run)
        .await
}

struct World {
    jobs: Jobs,
    driver: Arc<dyn JobDriver>,
    clock: TestClock,
    worker: Worker,
    store: Arc<Store>,
}

impl World {
    fn new(driver: Arc<dyn JobDriver>) -> World {
        let clock = TestClock::new();
        let jobs = Jobs::with_clock(driver.clone(), Arc::new(clock.clone()));
        let store = Arc::new(Store::default());
        let mut registry = Registry::new();
        registry.register::<OrderWebhook>().unwrap();
        registry.register::<StrictWebhook>().unwrap();
        registry.register::<TenantWebhook>().unwrap();
        registry.register::<PurgeAttempts>().unwrap();
        let worker = jobs
            .worker()
            .registry(registry)
            .context(store.clone())
            .build()
            .unwrap();
        World {
            jobs,
            driver,
            clock,
            worker,
            store,
        }
    }

    fn ledger(&self) -> &dyn WebhookLedger {
        self.driver.webhook_ledger().expect("every driver has one")
    }

    /// Ticks the worker, moving the clock past each retry delay, until the job is finished.
    async fn settle(&self, id: JobId) -> jobs::driver::JobRecord {
        for _ in 0..40 {
            let row = self.jobs.job(id).await.unwrap().unwrap();
            if !row.state.is_live() {
                return row;
            }
            self.worker.tick().await.unwrap();
            self.clock.advance(Duration::from_secs(11));
        }
        panic!("job {id} did not finish within 40 ticks");
    }
}

async fn declared_webhooks_deliver_record_and_disable(driver: Arc<dyn JobDriver>) {
    let world = World::new(driver);
    let ok = HookServer::start(vec![Reply::status(503), Reply::status(204)]).await;
    world.store.endpoint("ep_ok", ok.url("/hooks"));
    world.store.event("evt_1");

    // A 5xx, then delivered: two attempts, both in the store's ledger, the run reset.
    let queued = OrderWebhook::enqueue(&world.jobs, WebhookDelivery::new("ep_ok", "evt_1"))
        .await
        .unwrap();
    let again = OrderWebhook::enqueue(&world.jobs, WebhookDelivery::new("ep_ok", "evt_1"))
        .await
        .unwrap();
    assert!(
        again.deduped,
        "a live delivery of one event to one endpoint dedupes"
    );
    assert_eq!(again.id, queued.id);
    let row = world.settle(queued.id).await;
    assert_eq!(row.state, JobState::Done, "{:?}", row.last_error);
    assert_eq!(row.attempt, 2);
    let got = ok.received();
    assert_eq!(got.len(), 2);
    assert!(got[1].headers.contains_key(SIGNATURE_HEADER));
    assert_eq!(got[1].path, "/hooks");
    assert_eq!(got[1].body, br#"{"event":"evt_1"}"#);
    let attempts = world.ledger().attempts("ep_ok", 10).await.unwrap();
    let seen: Vec<_> = attempts.iter().map(|a| (a.status, a.delivered)).collect();
    assert_eq!(seen, [(Some(204), true), (Some(503), false)]);
    assert_eq!(
        world
            .ledger()
            .standing("ep_ok")
            .await
            .unwrap()
            .consecutive_failures,
        0
    );
    // Neither the URL nor the secret is in the stored input.
    assert!(!row.input.to_string().contains(SECRET));
    assert!(!row.input.to_string().contains("/hooks"));

    // Three failures in a row disable the endpoint: the third attempt ends the job terminally.
    let down = HookServer::start(vec![Reply::status(500)]).await;
    world.store.endpoint("ep_down", down.url("/"));
    world.store.event("evt_2");
    let queued = OrderWebhook::enqueue(&world.jobs, WebhookDelivery::new("ep_down", "evt_2"))
        .await
        .unwrap();
    let row = world.settle(queued.id).await;
    assert_eq!(
        row.last_error_code.as_deref(),
        Some("X_WEBHOOK_ENDPOINT_DISABLED")
    );
    assert_eq!(row.attempt, 3, "disabled after disable_after = 3 attempts");
    assert_eq!(down.received().len(), 3);
    assert!(world.ledger().is_disabled("ep_down").await.unwrap());

    // While disabled, a new delivery sends nothing; once the app enables it, it is delivered.
    world.store.event("evt_3");
    let queued = OrderWebhook::enqueue(&world.jobs, WebhookDelivery::new("ep_down", "evt_3"))
        .await
        .unwrap();
    let row = world.settle(queued.id).await;
    assert_eq!(
        row.last_error_code.as_deref(),
        Some("X_WEBHOOK_ENDPOINT_DISABLED")
    );
    assert_eq!(
        down.received().len(),
        3,
        "a disabled endpoint gets no request"
    );
    world.ledger().enable("ep_down").await.unwrap();
    world.store.endpoint("ep_down", ok.url("/again"));
    let queued = OrderWebhook::enqueue(&world.jobs, WebhookDelivery::new("ep_down", "evt_3"))
        .await
        .unwrap();
    assert_eq!(world.settle(queued.id).await.state, JobState::Done);

    // An unknown endpoint is terminal at once, nothing sent.
    let queued = OrderWebhook::enqueue(&world.jobs, WebhookDelivery::new("ep_nope", "evt_1"))
        .await
        .unwrap();
    let row = world.settle(queued.id).await;
    assert_eq!(
        row.last_error_code.as_deref(),
        Some("X_WEBHOOK_ENDPOINT_UNKNOWN")
    );
    assert_eq!(row.attempt, 1);

    // Without `allow_private`, the loopback receiver is refused before any request.
    let guarded = HookServer::start(vec![Reply::status(200)]).await;
    world.store.endpoint("ep_local", guarded.url("/"));
    let queued = StrictWebhook::enqueue(&world.jobs, WebhookDelivery::new("ep_local", "evt_1"))
        .await
        .unwrap();
    let row = world.settle(queued.id).await;
    assert_eq!(
        row.last_error_code.as_deref(),
        Some("X_WEBHOOK_ENDPOINT_INVALID")
    );
    assert!(guarded.received().is_empty());

    // A per-tenant webhook's delivery is the tenant's job.
    let queued =
        TenantWebhook::enqueue_for(&world.jobs, "acme", WebhookDelivery::new("ep_ok", "evt_1"))
            .await
            .unwrap();
    let row = world.settle(queued.id).await;
    assert_eq!(row.state, JobState::Done, "{:?}", row.last_error);
    assert_eq!(row.tenant_id.as_deref(), Some("acme"));

    // A week on, the purge job's `webhook_attempts` target deletes every attempt; the
    // endpoints keep their standing.
    let mut recorded = 0;
    for endpoint in ["ep_ok", "ep_down", "ep_local"] {
        recorded += world.ledger().attempts(endpoint, 100).await.unwrap().len() as u64;
    }
    assert!(recorded >= 7, "{recorded} attempts recorded");
    world
        .ledger()
        .disable("ep_ok", world.jobs.now())
        .await
        .unwrap();
    world
        .clock
        .advance(DEFAULT_WEBHOOK_ATTEMPT_RETENTION + Duration::from_secs(60));
    let queued = PurgeAttempts::enqueue(&world.jobs, PurgePass::default())
        .await
        .unwrap();
    let row = world.settle(queued.id).await;
    assert_eq!(row.state, JobState::Done, "{:?}", row.last_error);
    for endpoint in ["ep_ok", "ep_down", "ep_local"] {
        assert!(world
            .ledger()
            .attempts(endpoint, 100)
            .await
            .unwrap()
            .is_empty());
    }
    assert!(
        world.ledger().is_disabled("ep_ok").await.unwrap(),
        "standing kept"
    );
    let steps = world
        .driver
        .step_list(&jobs::driver::StepListParams { run_id: row.run_id })
        .await
        .unwrap();
    let purged = steps.iter().find(|s| s.name == "webhook_attempts").unwrap();
    assert_eq!(purged.output, Some(serde_json::json!(recorded)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_webhooks_on_memory() {
    declared_webhooks_deliver_record_and_disable(Arc::new(MemoryDriver::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_webhooks_on_postgres() {
    let driver = support::pg::driver("declared_webhooks_on_postgres").await;
    declared_webhooks_deliver_record_and_disable(driver).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_webhooks_on_sqlite() {
    let driver = support::sqlite::driver("declared_webhooks_on_sqlite").await;
    declared_webhooks_deliver_record_and_disable(driver).await;
}

#[test]
fn a_declaration_states_its_sender_settings() {
    let options = OrderWebhook::options();
    assert_eq!(options.disable_after, 3);
    assert_eq!(options.timeout, Duration::from_secs(5));
    assert!(options.allow_private && options.development);
    let strict = StrictWebhook::options();
    assert!(!strict.allow_private);
    assert_eq!(strict.disable_after, 10);
    assert_eq!(OrderWebhook::descriptor().name, "test.orders.webhook");
}
