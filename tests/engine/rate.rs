//! Fleet-wide rate limits declared with `#[job(rate(..))]` and queue limits given to the
//! worker (`WorkerBuilder::queue_limits`), on the memory driver with a frozen clock. The same
//! admission runs on every driver in the conformance suite (`conformance/rate.rs`).

use std::time::Duration;

use jobs::driver::lease::LeaseHoldersParams;
use jobs::prelude::*;
use jobs::testing::TestKit;
use jobs::{ExecutionOutcome, QueueLimits, RateLimit, Registry};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Charge {
    customer_id: String,
    n: u32,
}

fn charge(customer: &str, n: u32) -> Charge {
    Charge {
        customer_id: customer.into(),
        n,
    }
}

#[job(key = "rated:{n}", tenant = none, rate(limit = 2, per = "1m"))]
async fn rated_charge(_run: Run, _input: Charge) -> Result<(), JobError> {
    Ok(())
}

#[job(
    key = "keyed:{customer_id}:{n}",
    tenant = none,
    rate(limit = 1, per = "30s", key = "{customer_id}")
)]
async fn keyed_charge(_run: Run, _input: Charge) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "queued:{n}", tenant = none, queue = "payments")]
async fn queued_charge(_run: Run, _input: Charge) -> Result<(), JobError> {
    Ok(())
}

fn kit_for<J: Job>() -> TestKit {
    let mut registry = Registry::new();
    registry.register::<J>().unwrap();
    TestKit::with_registry(registry)
}

fn outcomes(pass: &[jobs::JobExecution]) -> Vec<ExecutionOutcome> {
    pass.iter().map(|e| e.outcome).collect()
}

#[test]
fn the_declaration_reads_into_the_descriptor() {
    assert_eq!(
        RatedCharge::descriptor().rate,
        Some(RateLimit {
            limit: 2,
            per: Duration::from_secs(60),
            keyed: false
        })
    );
    assert_eq!(
        KeyedCharge::descriptor().rate,
        Some(RateLimit {
            limit: 1,
            per: Duration::from_secs(30),
            keyed: true
        })
    );
    assert_eq!(
        KeyedCharge::rate_key(&charge("c-9", 1)).as_deref(),
        Some("c-9")
    );
    assert_eq!(RatedCharge::rate_key(&charge("c-9", 1)), None);
    assert_eq!(QueuedCharge::descriptor().rate, None);
}

#[tokio::test]
async fn a_run_over_the_rate_waits_for_its_window_without_spending_an_attempt() {
    let kit = kit_for::<RatedCharge>();
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(kit.enqueue::<RatedCharge>(charge("c", n)).await.id);
    }
    let t0 = kit.jobs().now();
    let pass = kit.worker().tick().await.unwrap();
    assert_eq!(
        outcomes(&pass),
        [
            ExecutionOutcome::Completed,
            ExecutionOutcome::Completed,
            ExecutionOutcome::Shed
        ]
    );
    let window = jobs::clock::add(t0, Duration::from_secs(60));
    assert_eq!(
        pass[2].resume_at,
        Some(window),
        "due when the first start lapses"
    );
    let row = kit.job(ids[2]).await;
    assert_eq!((row.state, row.attempt), (JobState::Ready, 0));
    assert_eq!(row.run_at, window);
    kit.advance(Duration::from_secs(59));
    assert!(kit.worker().tick().await.unwrap().is_empty(), "not before");
    kit.advance(Duration::from_secs(1));
    let pass = kit.worker().tick().await.unwrap();
    assert_eq!(outcomes(&pass), [ExecutionOutcome::Completed]);
    assert_eq!(kit.job(ids[2]).await.attempt, 1);
}

#[tokio::test]
async fn a_keyed_rate_counts_each_key_apart() {
    let kit = kit_for::<KeyedCharge>();
    kit.enqueue::<KeyedCharge>(charge("a", 1)).await;
    kit.enqueue::<KeyedCharge>(charge("a", 2)).await;
    kit.enqueue::<KeyedCharge>(charge("b", 1)).await;
    let pass = kit.worker().tick().await.unwrap();
    // a1 starts, a2 waits for key a's window, b1 starts beside it.
    assert_eq!(
        outcomes(&pass),
        [
            ExecutionOutcome::Completed,
            ExecutionOutcome::Shed,
            ExecutionOutcome::Completed
        ]
    );
    let holders = jobs::driver::JobDriver::lease_store(kit.driver())
        .unwrap()
        .lease_holders(&LeaseHoldersParams {
            key: "rate-key:keyed_charge:a",
            now: kit.jobs().now(),
        })
        .await
        .unwrap();
    assert_eq!(holders.len(), 1, "one start of key a in its window");
    kit.advance(Duration::from_secs(30));
    let pass = kit.worker().tick().await.unwrap();
    assert_eq!(outcomes(&pass), [ExecutionOutcome::Completed]);
}

#[tokio::test]
async fn a_queue_rate_holds_for_every_job_of_the_queue() {
    let mut registry = Registry::new();
    registry.register::<QueuedCharge>().unwrap();
    let kit = TestKit::with_worker(|w| {
        w.registry(registry).queues(["payments"]).queue_limits(
            "payments",
            QueueLimits::new().rate(1, Duration::from_secs(10)),
        )
    });
    for n in 0..3 {
        kit.enqueue::<QueuedCharge>(charge("c", n)).await;
    }
    let mut started = Vec::new();
    for _ in 0..6 {
        let pass = kit.worker().tick().await.unwrap();
        for run in pass {
            if run.outcome == ExecutionOutcome::Completed {
                started.push(kit.jobs().now());
            }
        }
        kit.advance(Duration::from_secs(5));
    }
    let t0 = started[0];
    let seconds: Vec<i64> = started.iter().map(|t| (*t - t0).num_seconds()).collect();
    assert_eq!(seconds, [0, 10, 20], "one start per 10 s window");
}

#[test]
fn queue_limits_are_checked_when_the_worker_is_built() {
    let minute = Duration::from_secs(60);
    let build = |limits: QueueLimits, queue: &str| {
        let mut registry = Registry::new();
        registry.register::<QueuedCharge>().unwrap();
        Jobs::memory()
            .worker()
            .registry(registry)
            .queues(["payments"])
            .queue_limits(queue, limits)
            .build()
    };
    for (limits, queue) in [
        (QueueLimits::new(), "payments"),
        (QueueLimits::new().concurrency(0), "payments"),
        (QueueLimits::new().rate(0, minute), "payments"),
        (QueueLimits::new().rate(1, Duration::ZERO), "payments"),
        (QueueLimits::new().concurrency(1), "elsewhere"),
    ] {
        let error = build(limits, queue).unwrap_err();
        assert_eq!(
            error.code(),
            Some(ErrorCode::Invariant),
            "{limits:?} {queue}"
        );
        assert!(error.fix().is_some(), "{error}");
    }
    build(
        QueueLimits::new().concurrency(3).rate(10, minute),
        "payments",
    )
    .unwrap();
}

#[test]
fn a_rated_job_or_a_limited_queue_needs_a_lease_store() {
    let no_lease_store = || Jobs::new(jobs::driver::MemoryDriver::without_lease_store());
    let mut registry = Registry::new();
    registry.register::<RatedCharge>().unwrap();
    let error = no_lease_store()
        .worker()
        .registry(registry)
        .build()
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobConcurrencyUnenforceable));
    assert!(error.message().contains("rated_charge"), "{error}");

    let mut registry = Registry::new();
    registry.register::<QueuedCharge>().unwrap();
    let error = no_lease_store()
        .worker()
        .registry(registry)
        .queues(["payments"])
        .queue_limits("payments", QueueLimits::new().concurrency(2))
        .build()
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobConcurrencyUnenforceable));
    assert!(error.fix().is_some(), "{error}");
}

#[tokio::test]
async fn a_keyed_rate_key_is_checked_at_enqueue() {
    let kit = kit_for::<KeyedCharge>();
    let error = KeyedCharge::enqueue(kit.jobs(), charge("", 1))
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobDeclarationInvalid));
    assert!(error.message().contains("rate key"), "{error}");
}

#[test]
fn the_manifest_shows_the_rate() {
    let manifest = jobs::manifest().unwrap();
    let row = |name: &str| {
        manifest
            .jobs()
            .iter()
            .find(|j| j["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no job {name} in the manifest"))
    };
    assert_eq!(
        row("keyed_charge")["rate"],
        serde_json::json!({ "limit": 1, "per_ms": 30_000, "keyed": true })
    );
    assert_eq!(
        row("rated_charge")["rate"],
        serde_json::json!({ "limit": 2, "per_ms": 60_000, "keyed": false })
    );
    assert_eq!(row("queued_charge")["rate"], serde_json::Value::Null);
}
