//! Fleet-wide concurrency caps, per-key limits and per-process limits, on the memory driver with
//! a frozen clock. The same admission runs on Postgres (tests/stores/concurrency_postgres.rs).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobs::driver::lease::LeaseAcquire;
use jobs::driver::lease::LeaseHoldersParams;
use jobs::prelude::*;
use jobs::testing::TestKit;
use jobs::{ExecutionOutcome, Limits, Registry, SHED_DELAY};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Sync {
    account: String,
    n: u32,
}

/// Yields once so that the other claimed runs of the same pass are admitted while this one
/// still holds its slot.
async fn busy() {
    tokio::task::yield_now().await;
}

#[job(key = "capped:{account}:{n}", tenant = account, concurrency = 1)]
async fn capped(_run: Run, _input: Sync) -> Result<(), JobError> {
    busy().await;
    Ok(())
}

#[job(
    key = "wait:{account}:{n}",
    tenant = account,
    concurrency(key = "{account}", limit = 1, when_busy = wait)
)]
async fn keyed_wait(_run: Run, _input: Sync) -> Result<(), JobError> {
    busy().await;
    Ok(())
}

static REFUSALS: Mutex<Vec<(Outcome, Option<ErrorCode>)>> = Mutex::new(Vec::new());

async fn refused_hook(settled: Settled<Sync, ()>) -> Result<(), JobError> {
    REFUSALS
        .lock()
        .unwrap()
        .push((settled.outcome, settled.code));
    Ok(())
}

#[job(
    key = "fail:{account}:{n}",
    tenant = account,
    concurrency(key = "{account}", limit = 1, when_busy = fail),
    on_settled = refused_hook
)]
async fn keyed_fail(_run: Run, _input: Sync) -> Result<(), JobError> {
    busy().await;
    Ok(())
}

#[job(key = "plain:{account}:{n}", tenant = account)]
async fn plain(_run: Run, _input: Sync) -> Result<(), JobError> {
    busy().await;
    Ok(())
}

fn kit_for<J: Job>() -> TestKit {
    let mut registry = Registry::new();
    registry.register::<J>().unwrap();
    TestKit::with_registry(registry)
}

fn sync(account: &str, n: u32) -> Sync {
    Sync {
        account: account.into(),
        n,
    }
}

fn outcomes(pass: &[jobs::JobExecution]) -> Vec<ExecutionOutcome> {
    pass.iter().map(|e| e.outcome).collect()
}

#[tokio::test]
async fn a_capped_job_runs_one_at_a_time_and_the_rest_are_handed_back_uncounted() {
    let kit = kit_for::<Capped>();
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(kit.enqueue::<Capped>(sync("a", n)).await.id);
    }
    let pass = kit.worker().tick().await.unwrap();
    assert_eq!(
        outcomes(&pass),
        [
            ExecutionOutcome::Completed,
            ExecutionOutcome::Shed,
            ExecutionOutcome::Shed
        ]
    );
    for id in &ids[1..] {
        let row = kit.job(*id).await;
        assert_eq!(row.state, JobState::Ready);
        assert_eq!(row.attempt, 0, "a shed spends no attempt");
        assert_eq!(row.run_at, jobs::clock::add(kit.jobs().now(), SHED_DELAY));
    }
    // Not claimable again before the shed delay; then one at a time.
    assert!(kit.worker().tick().await.unwrap().is_empty());
    kit.run_to_completion().await;
    for id in &ids {
        assert_eq!(kit.job(*id).await.state, JobState::Done);
    }
    let store = kit.driver();
    let holders = jobs::driver::JobDriver::lease_store(store)
        .unwrap()
        .lease_holders(&LeaseHoldersParams {
            key: "job:capped",
            now: kit.jobs().now(),
        })
        .await
        .unwrap();
    assert!(holders.is_empty(), "every slot was released");
}

#[tokio::test]
async fn a_keyed_cap_with_wait_leaves_the_busy_key_s_runs_ready() {
    let kit = kit_for::<KeyedWait>();
    kit.enqueue::<KeyedWait>(sync("a", 1)).await;
    let second = kit.enqueue::<KeyedWait>(sync("a", 2)).await;
    kit.enqueue::<KeyedWait>(sync("b", 1)).await;
    let pass = kit.worker().tick().await.unwrap();
    // The claim takes turns across tenants (a1, b1, then a2): the other key runs at once.
    assert_eq!(
        outcomes(&pass),
        [
            ExecutionOutcome::Completed,
            ExecutionOutcome::Completed,
            ExecutionOutcome::Shed
        ],
        "the other key runs at once"
    );
    let row = kit.job(second.id).await;
    assert_eq!((row.state, row.attempt), (JobState::Ready, 0));
    kit.run_to_completion().await;
    assert_eq!(kit.job(second.id).await.state, JobState::Done);
}

#[tokio::test]
async fn a_keyed_cap_with_fail_refuses_the_busy_key_s_run_and_tells_on_settled() {
    let kit = kit_for::<KeyedFail>();
    let first = kit.enqueue::<KeyedFail>(sync("a", 1)).await;
    let second = kit.enqueue::<KeyedFail>(sync("a", 2)).await;
    let pass = kit.worker().tick().await.unwrap();
    assert_eq!(
        outcomes(&pass),
        [ExecutionOutcome::Completed, ExecutionOutcome::Refused]
    );
    assert_eq!(pass[1].code, Some(ErrorCode::JobKeyBusy));
    let row = kit.job(second.id).await;
    assert_eq!(row.state, JobState::Failed, "refused, not dead-lettered");
    assert_eq!(row.attempt, 0, "a refusal spends no attempt");
    assert_eq!(row.last_error_code.as_deref(), Some("X_JOB_KEY_BUSY"));
    assert_eq!(kit.job(first.id).await.state, JobState::Done);
    let refusals = REFUSALS.lock().unwrap().clone();
    assert!(refusals.contains(&(Outcome::Refused, Some(ErrorCode::JobKeyBusy))));
    assert_eq!(kit.worker().stats().refused, 1);
}

#[tokio::test]
async fn a_run_is_not_refused_when_the_key_frees_before_its_claim() {
    let kit = kit_for::<KeyedFail>();
    kit.enqueue::<KeyedFail>(sync("a", 1)).await;
    kit.run_until_idle().await;
    let later = kit.enqueue::<KeyedFail>(sync("a", 2)).await;
    kit.run_until_idle().await;
    assert_eq!(kit.job(later.id).await.state, JobState::Done);
}

#[tokio::test]
async fn a_dead_holder_s_key_frees_when_its_lease_expires() {
    let kit = kit_for::<KeyedFail>();
    let store = jobs::driver::JobDriver::lease_store(kit.driver()).unwrap();
    // A worker that was SIGKILLed while holding the key: its slot lapses with its TTL.
    store
        .lease_acquire(&LeaseAcquire {
            key: "job-key:keyed_fail:a".into(),
            limit: 1,
            ttl: Duration::from_secs(30),
            holder: "dead-worker|some-job|1".into(),
            now: kit.jobs().now(),
        })
        .await
        .unwrap()
        .expect("free");
    let queued = kit.enqueue::<KeyedFail>(sync("a", 1)).await;
    let pass = kit.worker().tick().await.unwrap();
    assert_eq!(
        outcomes(&pass),
        [ExecutionOutcome::Refused],
        "busy until the TTL passes"
    );
    let retry = kit.enqueue::<KeyedFail>(sync("a", 1)).await;
    assert!(
        !retry.deduped && retry.id != queued.id,
        "a refused run frees its key"
    );
    kit.advance(Duration::from_secs(30));
    let pass = kit.worker().tick().await.unwrap();
    assert_eq!(outcomes(&pass), [ExecutionOutcome::Completed]);
}

#[tokio::test]
async fn a_zero_limit_is_a_hard_stop_and_never_costs_an_attempt() {
    let mut registry = Registry::new();
    registry.register::<Plain>().unwrap();
    let kit = TestKit::with_worker(|w| w.registry(registry).limits(Limits::new().global(0)));
    let queued = kit.enqueue::<Plain>(sync("a", 1)).await;
    for _ in 0..3 {
        let pass = kit.worker().tick().await.unwrap();
        assert_eq!(outcomes(&pass), [ExecutionOutcome::Shed]);
        kit.advance(SHED_DELAY);
    }
    let row = kit.job(queued.id).await;
    assert_eq!((row.state, row.attempt), (JobState::Ready, 0));
}

#[tokio::test]
async fn per_tenant_limits_and_the_tenant_start_rate_shed_only_that_tenant() {
    let mut registry = Registry::new();
    registry.register::<Plain>().unwrap();
    let kit = TestKit::with_worker(|w| {
        w.registry(registry)
            .limits(Limits::new().per_tenant(1).tenant_starts_per_second(1.0))
    });
    kit.enqueue::<Plain>(sync("a", 1)).await;
    kit.enqueue::<Plain>(sync("a", 2)).await;
    kit.enqueue::<Plain>(sync("b", 1)).await;
    let pass = kit.worker().tick().await.unwrap();
    let by_tenant: Vec<(String, ExecutionOutcome)> =
        pass.iter().map(|e| (e.name.clone(), e.outcome)).collect();
    // In the claim's turns: a1, b1, then a2, which is over tenant a's limit.
    assert_eq!(
        outcomes(&pass),
        [
            ExecutionOutcome::Completed,
            ExecutionOutcome::Completed,
            ExecutionOutcome::Shed
        ],
        "{by_tenant:?}"
    );
    // One start per second per tenant: the shed run starts once a second has passed.
    kit.advance(SHED_DELAY);
    let pass = kit.worker().tick().await.unwrap();
    assert_eq!(outcomes(&pass), [ExecutionOutcome::Completed]);
}

#[tokio::test]
async fn the_slots_are_renewed_by_the_heartbeat() {
    #[derive(Serialize, Deserialize, JsonSchema)]
    struct Long {
        n: u32,
    }
    static GATE: tokio::sync::Notify = tokio::sync::Notify::const_new();
    #[job(key = "long:{n}", tenant = none, concurrency = 1)]
    async fn long_capped(_run: Run, _input: Long) -> Result<(), JobError> {
        GATE.notified().await;
        Ok(())
    }
    let mut registry = Registry::new();
    registry.register::<LongCapped>().unwrap();
    let kit = Arc::new(TestKit::with_registry(registry));
    kit.enqueue::<LongCapped>(Long { n: 1 }).await;
    let worker = kit.worker().clone();
    let pass = tokio::spawn(async move { worker.tick().await.unwrap() });
    // Wait (bounded) until the body runs and the heartbeat timer is armed.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while kit.clock().pending_timers() == 0 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::task::yield_now().await;
    }
    let store = jobs::driver::JobDriver::lease_store(kit.driver()).unwrap();
    for _ in 0..4 {
        kit.advance(Duration::from_secs(10));
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    }
    let holders = store
        .lease_holders(&LeaseHoldersParams {
            key: "job:long_capped",
            now: kit.jobs().now(),
        })
        .await
        .unwrap();
    assert_eq!(
        holders.len(),
        1,
        "40 s in, past the 30 s TTL, the slot is still held"
    );
    GATE.notify_one();
    let pass = pass.await.unwrap();
    assert_eq!(outcomes(&pass), [ExecutionOutcome::Completed]);
}

#[tokio::test]
async fn a_claim_turned_away_by_a_fleet_cap_spends_no_tenant_start_token() {
    // One start per second per tenant (a bucket of one token), and the capped job's one fleet
    // slot held by another worker: the capped run is turned away after it entered the
    // per-process limits. Its token is refunded, so tenant a's next run starts at once, at the
    // same instant, instead of waiting a second for a token a run that never started spent.
    let mut registry = Registry::new();
    registry.register::<Capped>().unwrap();
    registry.register::<Plain>().unwrap();
    let kit = TestKit::with_worker(|w| {
        w.registry(registry)
            .limits(Limits::new().tenant_starts_per_second(1.0))
    });
    let store = jobs::driver::JobDriver::lease_store(kit.driver()).unwrap();
    let elsewhere = store
        .lease_acquire(&LeaseAcquire {
            key: "job:capped".into(),
            limit: 1,
            ttl: Duration::from_secs(30),
            holder: "another-worker|another-job|1".into(),
            now: kit.jobs().now(),
        })
        .await
        .unwrap()
        .expect("free");
    let capped = kit.enqueue::<Capped>(sync("a", 1)).await;
    let pass = kit.worker().tick().await.unwrap();
    assert_eq!(
        outcomes(&pass),
        [ExecutionOutcome::Shed],
        "over the fleet cap"
    );
    assert_eq!(kit.job(capped.id).await.attempt, 0);
    store.lease_release(&elsewhere).await.unwrap();

    let plain = kit.enqueue::<Plain>(sync("a", 2)).await;
    let pass = kit.worker().tick().await.unwrap();
    assert_eq!(
        outcomes(&pass),
        [ExecutionOutcome::Completed],
        "the token the turned-away run took was given back"
    );
    assert_eq!(kit.job(plain.id).await.state, JobState::Done);
    // And the bucket still holds one second's worth: the next start waits for its token.
    kit.enqueue::<Plain>(sync("a", 3)).await;
    let pass = kit.worker().tick().await.unwrap();
    assert_eq!(
        outcomes(&pass),
        [ExecutionOutcome::Shed],
        "one token a second"
    );
}
