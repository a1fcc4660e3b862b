//! The transactional outbox through the client, on the memory store: staging through the typed
//! handle, `OutboxMode::Required` and its opt-out, the relay's settings, its loop (the wake,
//! the idle backoff to its ceiling, the stop), and the worker that runs it.

use std::sync::Arc;
use std::time::Duration;

use jobs::clock::TestClock;
use jobs::driver::outbox::OutboxStore;
use jobs::driver::{MemoryDriver, MemoryOutbox};
use jobs::outbox::{OutboxMode, OutboxRelay};
use jobs::prelude::*;
use jobs::testing::OutboxProbe;
use jobs::{EnqueueOptions, Registry};

use crate::support::wait::wait_until;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Signup {
    user_id: u64,
}

#[job(name = "test.outbox.welcome", key = "welcome:{user_id}", tenant = none)]
async fn outbox_welcome(_run: Run, input: Signup) -> Result<u64, JobError> {
    Ok(input.user_id)
}

fn clock() -> Arc<TestClock> {
    Arc::new(TestClock::new())
}

fn client(clock: &Arc<TestClock>) -> Jobs {
    Jobs::with_clock(Arc::new(MemoryDriver::new()), clock.clone())
}

#[tokio::test]
async fn a_staged_enqueue_answers_the_job_s_ids_and_exists_once_relayed() {
    let clock = clock();
    let outbox = MemoryOutbox::new();
    let jobs = client(&clock).with_outbox(outbox.clone(), OutboxMode::Optional);
    let mut tx = outbox.begin();
    let staged = OutboxWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id: 7 })
        .await
        .unwrap();
    assert!(!staged.deduped, "deduped is known only at publish");
    assert_eq!(tx.staged(), 1);
    tx.commit();
    assert!(
        jobs.job(staged.id).await.unwrap().is_none(),
        "not yet relayed"
    );

    let relay = OutboxRelay::builder(outbox.clone(), &jobs).build().unwrap();
    assert_eq!(relay.pass().await.unwrap().published, 1);
    let row = jobs
        .job(staged.id)
        .await
        .unwrap()
        .expect("the staged id is the job's");
    assert_eq!(row.run_id, staged.run_id);
    // The traceparent was stamped at stage: the relay runs with no request span.
    assert!(row.traceparent.is_some());

    let registry = Registry::global().unwrap().clone();
    let worker = jobs.worker().registry(registry).build().unwrap();
    let ran = worker.tick().await.unwrap();
    assert_eq!(ran.len(), 1);
    assert_eq!(
        jobs.job(staged.id).await.unwrap().unwrap().state,
        JobState::Done
    );
}

#[tokio::test]
async fn a_rolled_back_stage_publishes_nothing() {
    let outbox = MemoryOutbox::new();
    let jobs = client(&clock()).with_outbox(outbox.clone(), OutboxMode::Required);
    let mut tx = outbox.begin();
    OutboxWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id: 1 })
        .await
        .unwrap();
    tx.rollback();
    let mut dropped = outbox.begin();
    OutboxWelcome::enqueue_in(&jobs, &mut dropped, Signup { user_id: 2 })
        .await
        .unwrap();
    drop(dropped);
    let relay = OutboxRelay::builder(outbox.clone(), &jobs).build().unwrap();
    assert_eq!(relay.pass().await.unwrap().claimed, 0);
    assert_eq!(outbox.outbox_stats().await.unwrap().backlog, 0);
}

#[tokio::test]
async fn required_mode_refuses_an_enqueue_outside_a_transaction_unless_it_says_direct() {
    let outbox = MemoryOutbox::new();
    let jobs = client(&clock()).with_outbox(outbox.clone(), OutboxMode::Required);
    let refused = OutboxWelcome::enqueue(&jobs, Signup { user_id: 3 })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::OutboxNoTx));
    assert!(refused.fix().unwrap_or_default().contains("direct()"));
    let many = jobs
        .enqueue_many::<OutboxWelcome, _>([Signup { user_id: 4 }])
        .await
        .unwrap_err();
    assert_eq!(many.code(), Some(ErrorCode::OutboxNoTx));
    assert!(
        jobs.stats().await.unwrap().is_empty(),
        "nothing was written"
    );

    let direct =
        OutboxWelcome::enqueue_with(&jobs, Signup { user_id: 3 }, EnqueueOptions::new().direct())
            .await
            .unwrap();
    assert!(jobs.job(direct.id).await.unwrap().is_some());
    assert_eq!(outbox.outbox_stats().await.unwrap().backlog, 0);
}

#[tokio::test]
async fn optional_mode_publishes_a_plain_enqueue_directly() {
    let outbox = MemoryOutbox::new();
    let jobs = client(&clock()).with_outbox(outbox.clone(), OutboxMode::Optional);
    let queued = OutboxWelcome::enqueue(&jobs, Signup { user_id: 5 })
        .await
        .unwrap();
    assert!(jobs.job(queued.id).await.unwrap().is_some());
    assert_eq!(outbox.outbox_stats().await.unwrap().backlog, 0);
}

#[tokio::test]
async fn a_transaction_of_another_outbox_is_refused() {
    let outbox = MemoryOutbox::new();
    let jobs = client(&clock()).with_outbox(outbox, OutboxMode::Optional);
    let mut foreign = MemoryOutbox::new().begin();
    let refused = OutboxWelcome::enqueue_in(&jobs, &mut foreign, Signup { user_id: 6 })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::DriverUnavailable));
    assert_eq!(foreign.staged(), 0);
}

#[tokio::test]
async fn the_relay_refuses_settings_it_cannot_keep() {
    let jobs = client(&clock());
    let build = |b: jobs::outbox::OutboxRelayBuilder| b.build().map(|_| ()).unwrap_err();
    let refusals = [
        build(OutboxRelay::builder(MemoryOutbox::new(), &jobs).claim_lease(Duration::ZERO)),
        build(
            OutboxRelay::builder(MemoryOutbox::new(), &jobs)
                .claim_lease(Duration::from_micros(1_500)),
        ),
        build(OutboxRelay::builder(MemoryOutbox::new(), &jobs).batch(0)),
        build(OutboxRelay::builder(MemoryOutbox::new(), &jobs).interval(Duration::ZERO)),
        build(OutboxRelay::builder(MemoryOutbox::new(), &jobs).holder("")),
    ];
    for refused in refusals {
        assert_eq!(refused.code(), Some(ErrorCode::Invariant), "{refused}");
    }
    let relay = OutboxRelay::builder(MemoryOutbox::new(), &jobs)
        .claim_lease(Duration::from_millis(45_000))
        .build()
        .unwrap();
    assert!(relay.holder().starts_with("relay:"));
}

/// A memory outbox behind a probe that counts claims, with its wake or without one.
struct Counting {
    inner: MemoryOutbox,
    probe: OutboxProbe,
}

fn counting(wake: bool) -> Counting {
    let inner = MemoryOutbox::new();
    let probe = OutboxProbe::new(inner.clone());
    let probe = if wake { probe } else { probe.without_wake() };
    Counting { inner, probe }
}

/// Waits until the relay made `claims` claims and sleeps on the clock again.
async fn parked_after(store: &Counting, clock: &TestClock, claims: usize) {
    wait_until("the relay to claim and park", || async {
        store.probe.claims() >= claims && clock.pending_timers() == 1
    })
    .await;
    assert_eq!(store.probe.claims(), claims);
}

/// Idle, the relay's wait doubles from the interval (200 ms) to its ceiling: 5 s with a live
/// wake (12 claims a minute once settled), 2 s without one (30 a minute).
#[tokio::test]
async fn an_idle_relay_backs_off_doubling_to_its_ceiling() {
    for (wake, ceiling_ms) in [(true, 5_000_u64), (false, 2_000)] {
        let clock = clock();
        let store = counting(wake);
        let jobs = client(&clock);
        let handle = OutboxRelay::builder(store.probe.clone(), &jobs)
            .build()
            .unwrap()
            .start();
        let mut claims = 1;
        parked_after(&store, &clock, claims).await;
        let mut wait = 200;
        let mut elapsed = 0;
        let mut per_minute_after_settling = 0;
        // Every claim in the two minutes after the first; the second minute's are counted.
        while elapsed + wait <= 120_000 {
            clock.advance(Duration::from_millis(wait));
            elapsed += wait;
            claims += 1;
            parked_after(&store, &clock, claims).await;
            if elapsed > 60_000 {
                per_minute_after_settling += 1;
            }
            wait = (wait * 2).min(ceiling_ms);
        }
        assert_eq!(
            per_minute_after_settling,
            60_000 / ceiling_ms as usize,
            "claims in the second minute (wake: {wake})"
        );
        assert!(handle.stop(Duration::from_secs(1)).await);
    }
}

/// A committed stage wakes an idle relay at once: no clock moves, and the job is published.
#[tokio::test]
async fn a_committed_stage_wakes_the_idle_relay() {
    let clock = clock();
    let store = counting(true);
    let jobs = client(&clock).with_outbox(store.probe.clone(), OutboxMode::Required);
    let handle = OutboxRelay::builder(store.probe.clone(), &jobs)
        .build()
        .unwrap()
        .start();
    parked_after(&store, &clock, 1).await;
    let mut tx = store.inner.begin();
    let staged = OutboxWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id: 9 })
        .await
        .unwrap();
    tx.commit();
    wait_until("the woken relay to publish the job", || async {
        jobs.job(staged.id).await.unwrap().is_some()
    })
    .await;
    assert!(handle.stop(Duration::from_secs(1)).await);
}

/// A worker built with the relay starts it and stops it at its shutdown.
#[tokio::test]
async fn a_worker_runs_its_relay_and_stops_it_at_shutdown() {
    let clock = clock();
    let store = counting(true);
    let jobs = client(&clock).with_outbox(store.probe.clone(), OutboxMode::Optional);
    let relay = OutboxRelay::builder(store.probe.clone(), &jobs)
        .build()
        .unwrap();
    let registry = Registry::global().unwrap().clone();
    let worker = jobs
        .worker()
        .registry(registry)
        .queues(["test.outbox.none"])
        .outbox_relay(relay)
        .build()
        .unwrap();
    let handle = worker.start();
    wait_until("the worker's relay to claim", || async {
        store.probe.claims() >= 1
    })
    .await;
    let report = handle.shutdown().await;
    assert_eq!(report.interrupted, 0);
    let after = store.probe.claims();
    clock.advance(Duration::from_secs(60));
    tokio::task::yield_now().await;
    assert_eq!(store.probe.claims(), after, "no claim after the stop");
}

/// The purge target deletes published rows older than its window, in as many batches as it
/// takes, and keeps the backlog and newer rows.
#[tokio::test]
async fn the_outbox_purge_target_deletes_the_audit_trail_past_its_window() {
    use jobs::purge::PurgeTarget;
    let clock = clock();
    let outbox = MemoryOutbox::new();
    let jobs = client(&clock).with_outbox(outbox.clone(), OutboxMode::Required);
    let mut tx = outbox.begin();
    for user_id in 0..1_205 {
        OutboxWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id })
            .await
            .unwrap();
    }
    tx.commit();
    let relay = OutboxRelay::builder(outbox.clone(), &jobs)
        .batch(2_000)
        .build()
        .unwrap();
    assert_eq!(relay.pass().await.unwrap().published, 1_205);
    clock.advance(Duration::from_secs(3_600));
    let mut tx = outbox.begin();
    OutboxWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id: 99_999 })
        .await
        .unwrap();
    tx.commit();
    let target = jobs::outbox::OutboxPurge::new(outbox.clone(), Duration::from_secs(1_800));
    assert_eq!(target.name(), "outbox");
    assert_eq!(target.purge_expired(jobs.now()).await.unwrap(), 1_205);
    let stats = outbox.outbox_stats().await.unwrap();
    assert_eq!((stats.backlog, stats.published), (1, 0));
}
