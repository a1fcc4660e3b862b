//! The worker: bad payloads, unknown jobs, per-queue slots, heartbeats, cancellation, lease
//! lapses and their burial, fenced settles, and graceful shutdown.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobs::driver::{
    AckParams, ClaimParams, ClaimResult, EnqueueRequest, HeartbeatParams, NackParams, NackTarget,
    QueueDemand, LEASE_LAPSED_FINAL_ATTEMPT,
};
use jobs::prelude::*;
use jobs::testing::TestKit;
use jobs::ExecutionOutcome;

use crate::support::time::elapsed;
use crate::support::wait::{bounded, wait_until};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Item {
    id: u64,
}

/// What a gated job shares with its test.
#[derive(Default)]
struct Gate {
    started: AtomicU32,
    finished: AtomicU32,
    cancelled: AtomicBool,
    release: tokio::sync::Notify,
}

/// Runs until the test releases it (or its attempt is cancelled).
#[job(key = "gated:{id}", tenant = none, retry(attempts = 3))]
async fn gated(run: Run, _input: Item) -> Result<(), JobError> {
    let gate = run.context::<Gate>()?;
    gate.started.fetch_add(1, Ordering::SeqCst);
    let watcher = run.clone();
    let seen = gate.clone();
    tokio::spawn(async move {
        watcher.cancelled().await;
        seen.cancelled.store(true, Ordering::SeqCst);
    });
    gate.release.notified().await;
    gate.finished.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

#[job(key = "quick:{id}", tenant = none)]
async fn quick(_run: Run, input: Item) -> Result<u64, JobError> {
    Ok(input.id)
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Typed {
    a: u64,
}

#[job(key = "typed:{a}", tenant = none)]
async fn typed_input(_run: Run, input: Typed) -> Result<u64, JobError> {
    Ok(input.a)
}

#[job(name = "worker.plain", key = "plain:{id}", tenant = none, retry(attempts = 2))]
async fn plain(run: Run, _input: Item) -> Result<u32, JobError> {
    Ok(run.attempt())
}

#[job(key = "flaky-once:{id}", tenant = none, retry(attempts = 2, delay = "1s", jitter = none))]
async fn flaky_once(run: Run, _input: Item) -> Result<u32, JobError> {
    if run.attempt() == 1 {
        return Err(JobError::retryable("first attempt fails"));
    }
    Ok(run.attempt())
}

/// The clock a paused job moves, for how long, and how many times its second step's closure
/// ran.
#[derive(Default)]
struct Pause {
    clock: std::sync::OnceLock<jobs::clock::TestClock>,
    /// How long the first attempt stands still (0: 31 s).
    millis: std::sync::atomic::AtomicU64,
    after_ran: AtomicU32,
}

/// Its first attempt stands still between two steps (31 s: longer than the visibility window),
/// as a process stopped and resumed would: no renewal lands meanwhile.
#[job(key = "paused:{id}", tenant = none, retry(attempts = 3))]
async fn paused(run: Run, _input: Item) -> Result<(), JobError> {
    let pause = run.context::<Pause>()?;
    run.step("before", async { Ok::<_, JobError>(1) }).await?;
    if run.attempt() == 1 {
        let clock = pause.clock.get().ok_or(JobError::retryable("no clock"))?;
        let millis = pause.millis.load(Ordering::SeqCst);
        clock.advance(Duration::from_millis(if millis == 0 {
            31_000
        } else {
            millis
        }));
    }
    run.step("after", async {
        pause.after_ran.fetch_add(1, Ordering::SeqCst);
        Ok::<_, JobError>(2)
    })
    .await?;
    Ok(())
}

/// `(job, outcome, error, code)` for every ending the hook heard.
type Ending = (uuid::Uuid, Outcome, Option<String>, Option<ErrorCode>);

static BURIED: Mutex<Vec<Ending>> = Mutex::new(Vec::new());

async fn on_buried(settled: Settled<Item, ()>) -> Result<(), JobError> {
    BURIED.lock().unwrap().push((
        settled.job_id,
        settled.outcome,
        settled.error.clone(),
        settled.code,
    ));
    Ok(())
}

static FRAGILE_RUNS: AtomicU32 = AtomicU32::new(0);

#[job(key = "fragile:{id}", tenant = none, retry(attempts = 1), on_settled = on_buried)]
async fn fragile(_run: Run, _input: Item) -> Result<(), JobError> {
    FRAGILE_RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

#[job(key = "fragile-drop:{id}", tenant = none, retry(attempts = 1), dead_letter = false, on_settled = on_buried)]
async fn fragile_drop(_run: Run, _input: Item) -> Result<(), JobError> {
    FRAGILE_RUNS.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

// ---- helpers -----------------------------------------------------------------------------

const VISIBILITY: Duration = Duration::from_secs(30);

async fn claim_by_hand(jobs: &Jobs, worker_id: &str) -> ClaimResult {
    jobs.driver()
        .job_claim(&ClaimParams {
            demand: vec![QueueDemand {
                queue: "default".into(),
                limit: 10,
            }],
            worker_id: worker_id.into(),
            visibility_timeout: VISIBILITY,
            drop_exhausted: Vec::new(),
            fair_after: String::new(),
            now: jobs.now(),
        })
        .await
        .unwrap()
}

/// Puts a raw row in the queue, as an older deploy (or another service) would have.
async fn enqueue_raw(jobs: &Jobs, name: &str, input: serde_json::Value) -> uuid::Uuid {
    let now = jobs.now();
    let id = uuid::Uuid::new_v4();
    let result = jobs
        .driver()
        .job_enqueue(&EnqueueRequest {
            id,
            input,
            ..crate::support::request::request(name, "default", &format!("raw:{id}"), now, now)
        })
        .await
        .unwrap();
    assert!(!result.deduped);
    id
}

fn gated_kit(
    configure: impl FnOnce(jobs::WorkerBuilder) -> jobs::WorkerBuilder,
) -> (TestKit, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let context = gate.clone();
    let kit = TestKit::with_worker(move |w| configure(w.context(context)));
    (kit, gate)
}

// ---- payloads and names ------------------------------------------------------------------

#[tokio::test]
async fn a_payload_that_no_longer_parses_is_dead_lettered_and_the_worker_carries_on() {
    let kit = TestKit::new();
    let bad = enqueue_raw(
        kit.jobs(),
        "typed_input",
        serde_json::json!({ "a": "card-4111-1111-secret" }),
    )
    .await;
    let good = TypedInput::enqueue(kit.jobs(), Typed { a: 5 })
        .await
        .unwrap();

    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 2);
    let bad_run = executions.iter().find(|e| e.job_id == bad).unwrap();
    assert_eq!(bad_run.outcome, ExecutionOutcome::DeadLettered);
    assert_eq!(bad_run.code, Some(ErrorCode::JobInputInvalid));
    let good_run = executions.iter().find(|e| e.job_id == good.id).unwrap();
    assert_eq!(good_run.outcome, ExecutionOutcome::Completed);

    let row = kit.job(bad).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(row.attempt, 1, "terminal: no retry");
    assert_eq!(row.last_error_code.as_deref(), Some("X_JOB_INPUT_INVALID"));
    let last_error = row.last_error.unwrap();
    assert!(last_error.contains("typed_input"), "{last_error}");
    assert!(
        !last_error.contains("4111"),
        "the payload leaked: {last_error}"
    );
    assert!(!bad_run.error.as_deref().unwrap().contains("4111"));
    assert_eq!(kit.job(good.id).await.state, JobState::Done);

    // And the worker keeps claiming.
    let later = Quick::enqueue(kit.jobs(), Item { id: 1 }).await.unwrap();
    kit.run_until_idle().await;
    assert_eq!(kit.job(later.id).await.state, JobState::Done);
}

#[tokio::test]
async fn an_unknown_job_name_is_handed_back_uncounted() {
    let kit = TestKit::new();
    let start = kit.jobs().now();
    let ghost = enqueue_raw(kit.jobs(), "ghost", serde_json::json!({})).await;
    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Deferred);
    assert_eq!(executions[0].name, "ghost");

    let row = kit.job(ghost).await;
    assert_eq!(row.state, JobState::Ready);
    assert_eq!(row.attempt, 0, "a deferral is not an attempt");
    assert_eq!(row.claims, 1);
    assert_eq!(elapsed(start, row.run_at), VISIBILITY);
    assert_eq!(kit.worker().stats().deferred, 1);
    assert!(
        kit.run_until_idle().await.is_empty(),
        "not handed out again at once"
    );
}

// ---- slots -------------------------------------------------------------------------------

#[tokio::test]
async fn a_pass_claims_at_most_the_free_slots_of_each_queue() {
    let kit = TestKit::with_worker(|w| {
        w.queues(["default", "bulk"])
            .concurrency(2)
            .queue_concurrency("bulk", 1)
    });
    for id in 0..5 {
        Quick::enqueue(kit.jobs(), Item { id }).await.unwrap();
    }
    for id in 10..13 {
        Quick::enqueue_with(kit.jobs(), Item { id }, EnqueueOptions::new().queue("bulk"))
            .await
            .unwrap();
    }
    let mut passes = Vec::new();
    loop {
        let executions = kit.worker().tick().await.unwrap();
        if executions.is_empty() {
            break;
        }
        let mut per_queue = (0, 0);
        for e in &executions {
            assert_eq!(e.outcome, ExecutionOutcome::Completed);
            match kit.job(e.job_id).await.queue.as_str() {
                "default" => per_queue.0 += 1,
                "bulk" => per_queue.1 += 1,
                other => panic!("unexpected queue {other}"),
            }
        }
        passes.push(per_queue);
    }
    assert_eq!(passes, [(2, 1), (2, 1), (1, 1)]);
    assert_eq!(kit.worker().stats().completed, 8);
}

#[tokio::test]
async fn a_running_worker_never_holds_more_than_its_slots() {
    let (kit, gate) = gated_kit(|w| w.concurrency(2));
    let mut ids = Vec::new();
    for id in 0..3 {
        ids.push(Gated::enqueue(kit.jobs(), Item { id }).await.unwrap().id);
    }
    let handle = kit.worker().start();
    wait_until("two jobs started", || async {
        gate.started.load(Ordering::SeqCst) == 2
    })
    .await;
    // More passes come and go; the third job stays queued while both slots are taken.
    for _ in 0..5 {
        kit.advance(Duration::from_secs(1));
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }
    assert_eq!(gate.started.load(Ordering::SeqCst), 2);
    let mut states = Vec::new();
    for id in &ids {
        states.push(kit.job(*id).await.state);
    }
    assert_eq!(
        states.iter().filter(|s| **s == JobState::Running).count(),
        2
    );
    assert_eq!(states.iter().filter(|s| **s == JobState::Ready).count(), 1);

    // A slot coming free is refilled.
    gate.release.notify_one();
    wait_until("the third job started", || async {
        gate.started.load(Ordering::SeqCst) == 3
    })
    .await;
    gate.release.notify_one();
    gate.release.notify_one();
    wait_until("all three finished", || async {
        gate.finished.load(Ordering::SeqCst) == 3
    })
    .await;
    let report = bounded("shutdown", handle.shutdown()).await;
    assert_eq!(report.interrupted, 0);
    for id in ids {
        assert_eq!(kit.job(id).await.state, JobState::Done);
    }
}

// ---- heartbeat and cancel ----------------------------------------------------------------

#[tokio::test]
async fn the_heartbeat_keeps_a_long_job_claimed() {
    let (kit, gate) = gated_kit(|w| w);
    let queued = Gated::enqueue(kit.jobs(), Item { id: 1 }).await.unwrap();
    let worker = kit.worker().clone();
    let pass = tokio::spawn(async move { worker.tick().await });
    wait_until("the job runs with its heartbeat armed", || async {
        gate.started.load(Ordering::SeqCst) == 1 && kit.clock().pending_timers() == 1
    })
    .await;
    let first = kit.job(queued.id).await;
    assert_eq!(
        first.visible_at,
        Some(jobs::clock::add(kit.jobs().now(), VISIBILITY))
    );

    // 40 s: longer than the 30 s visibility timeout, in heartbeat-sized steps.
    for _ in 0..4 {
        kit.advance(Duration::from_secs(10));
        let expected = jobs::clock::add(kit.jobs().now(), VISIBILITY);
        wait_until("the renewal landed and the next one is armed", || async {
            kit.job(queued.id).await.visible_at == Some(expected)
                && kit.clock().pending_timers() == 1
        })
        .await;
    }
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Running);
    assert!(row.visible_at > first.visible_at);
    assert_eq!(row.claims, 1);

    // Another worker finds nothing to take.
    let other = kit.jobs().worker().id("other").build().unwrap();
    assert!(other.tick().await.unwrap().is_empty());

    gate.release.notify_one();
    let executions = bounded("the pass", pass).await.unwrap().unwrap();
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Completed);
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(row.attempt, 1);
    assert_eq!(row.claims, 1);
    assert!(!gate.cancelled.load(Ordering::SeqCst));
}

#[tokio::test]
async fn an_attempt_whose_claim_window_passed_starts_no_further_step() {
    let pause = Arc::new(Pause::default());
    let context = pause.clone();
    let kit = TestKit::with_worker(move |w| w.context(context));
    let _ = pause.clock.set(kit.clock().clone());
    let queued = Paused::enqueue(kit.jobs(), Item { id: 1 }).await.unwrap();

    let first = kit.worker().tick().await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].outcome, ExecutionOutcome::LeaseLost);
    assert_eq!(
        pause.after_ran.load(Ordering::SeqCst),
        0,
        "the step after the pause never started"
    );

    // The claim lapsed, so the next pass takes the job again and finishes it from its steps.
    kit.run_until_idle().await;
    assert_eq!(pause.after_ran.load(Ordering::SeqCst), 1);
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
}

#[tokio::test]
async fn an_attempt_within_the_clock_skew_allowance_of_its_lapse_starts_no_further_step() {
    // Another worker's clock may run ahead by the allowance and take the row that early.
    for (skew, starts) in [(None, false), (Some(Duration::ZERO), true)] {
        let pause = Arc::new(Pause::default());
        let context = pause.clone();
        let kit = TestKit::with_worker(move |w| match skew {
            Some(skew) => w.context(context).clock_skew(skew),
            None => w.context(context),
        });
        let _ = pause.clock.set(kit.clock().clone());
        // Inside the 30 s visibility window, within the default 1 s allowance of its end.
        pause.millis.store(29_500, Ordering::SeqCst);
        Paused::enqueue(kit.jobs(), Item { id: 1 }).await.unwrap();
        let first = kit.worker().tick().await.unwrap();
        assert_eq!(first.len(), 1);
        let ran = pause.after_ran.load(Ordering::SeqCst);
        assert_eq!(
            ran == 1,
            starts,
            "clock skew {skew:?}: {:?}",
            first[0].outcome
        );
        if !starts {
            assert_eq!(first[0].outcome, ExecutionOutcome::LeaseLost);
        }
    }
}

#[tokio::test]
async fn a_clock_skew_allowance_that_leaves_no_window_is_refused() {
    let jobs = jobs::Jobs::memory();
    let worker = |skew_ms: u64| {
        jobs.worker()
            .visibility_timeout(Duration::from_secs(5))
            .heartbeat_interval(Duration::from_secs(2))
            .clock_skew(Duration::from_millis(skew_ms))
            .build()
    };
    let error = worker(3_000).unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::Invariant));
    assert!(error.message().contains("clock skew"), "{error}");
    assert!(
        error
            .fix()
            .is_some_and(|fix| fix.contains("visibility_timeout")),
        "{error}"
    );
    assert!(worker(2_900).is_ok());
}

#[tokio::test]
async fn cancelling_a_running_job_stops_it_at_its_next_heartbeat() {
    let (kit, gate) = gated_kit(|w| w);
    let queued = Gated::enqueue(kit.jobs(), Item { id: 1 }).await.unwrap();
    let worker = kit.worker().clone();
    let pass = tokio::spawn(async move { worker.tick().await });
    wait_until("the job runs with its heartbeat armed", || async {
        gate.started.load(Ordering::SeqCst) == 1 && kit.clock().pending_timers() == 1
    })
    .await;

    let cancelled = kit.jobs().cancel(queued.id).await.unwrap();
    assert_eq!(cancelled.state, JobState::Cancelled);
    assert!(
        !gate.cancelled.load(Ordering::SeqCst),
        "not before its heartbeat"
    );

    kit.advance(Duration::from_secs(10));
    let executions = bounded("the pass", pass).await.unwrap().unwrap();
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::LeaseLost);
    wait_until("the body saw its cancellation", || async {
        gate.cancelled.load(Ordering::SeqCst)
    })
    .await;
    assert_eq!(gate.finished.load(Ordering::SeqCst), 0);
    let row = kit.job(queued.id).await;
    assert_eq!(
        row.state,
        JobState::Cancelled,
        "the worker cannot un-cancel it"
    );
    assert_eq!(kit.worker().stats().lease_lost, 1);
    assert!(kit.run_until_idle().await.is_empty());

    // A queued job is cancelled at once and never claimed; a finished one is not cancellable.
    let queued = Quick::enqueue(kit.jobs(), Item { id: 2 }).await.unwrap();
    assert_eq!(
        kit.jobs().cancel(queued.id).await.unwrap().state,
        JobState::Cancelled
    );
    assert!(kit.run_until_idle().await.is_empty());
    let error = kit.jobs().cancel(queued.id).await.unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobNotCancellable));
}

// ---- lease lapse -------------------------------------------------------------------------

#[tokio::test]
async fn a_lapsed_lease_is_claimed_again() {
    let kit = TestKit::new();
    let queued = Plain::enqueue(kit.jobs(), Item { id: 1 }).await.unwrap();
    let dead = claim_by_hand(kit.jobs(), "dead-worker").await;
    assert_eq!(dead.jobs.len(), 1);
    assert_eq!(dead.jobs[0].attempt, 1);

    assert!(kit.run_until_idle().await.is_empty(), "still invisible");
    kit.advance(VISIBILITY - Duration::from_secs(1));
    assert!(kit.run_until_idle().await.is_empty(), "still invisible");
    kit.advance(Duration::from_secs(1));

    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].attempt, 2);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Completed);
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(row.attempt, 2, "a lapse is a counted attempt");
    assert_eq!(row.claims, 2);
    assert_eq!(row.claimed_by.as_deref(), Some(kit.worker().id()));
}

#[tokio::test]
async fn a_lapse_on_the_final_attempt_is_buried_and_announced() {
    let kit = TestKit::new();
    let dead = Fragile::enqueue(kit.jobs(), Item { id: 1 }).await.unwrap();
    let failed = FragileDrop::enqueue(kit.jobs(), Item { id: 1 })
        .await
        .unwrap();
    assert_eq!(claim_by_hand(kit.jobs(), "dead-worker").await.jobs.len(), 2);
    kit.advance(VISIBILITY);

    let executions = kit.run_until_idle().await;
    assert!(executions.is_empty(), "a buried row is never handed out");
    assert_eq!(FRAGILE_RUNS.load(Ordering::SeqCst), 0);

    let row = kit.job(dead.id).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(row.last_error.as_deref(), Some(LEASE_LAPSED_FINAL_ATTEMPT));
    assert_eq!(row.attempt, 1);
    let row = kit.job(failed.id).await;
    assert_eq!(
        row.state,
        JobState::Failed,
        "dead_letter = false buries it failed"
    );
    assert_eq!(row.last_error.as_deref(), Some(LEASE_LAPSED_FINAL_ATTEMPT));

    let buried = BURIED.lock().unwrap().clone();
    let of = |id| {
        buried
            .iter()
            .filter(|b| b.0 == id)
            .map(|b| (b.1, b.2.clone(), b.3))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        of(dead.id),
        [(
            Outcome::DeadLettered,
            Some(LEASE_LAPSED_FINAL_ATTEMPT.to_string()),
            None
        )]
    );
    assert_eq!(
        of(failed.id),
        [(
            Outcome::Dropped,
            Some(LEASE_LAPSED_FINAL_ATTEMPT.to_string()),
            None
        )]
    );
}

#[tokio::test]
async fn settles_are_fenced_on_the_claim() {
    let kit = TestKit::new();
    let queued = Plain::enqueue(kit.jobs(), Item { id: 1 }).await.unwrap();
    let old = claim_by_hand(kit.jobs(), "w1").await.jobs.remove(0);
    kit.advance(VISIBILITY);
    // Re-claimed by the same worker id: only the claim ordinal tells the two apart.
    let new = claim_by_hand(kit.jobs(), "w1").await.jobs.remove(0);
    assert_eq!(new.id, queued.id);
    assert_eq!(new.attempt, 2);
    assert_ne!(old.by, new.by);

    let driver = kit.jobs().driver();
    let now = kit.jobs().now();
    let ack = |by| AckParams {
        job_id: queued.id,
        by,
        result: None,
        now,
    };
    assert!(!driver.job_ack(&ack(old.by.clone())).await.unwrap());
    assert!(!driver
        .job_heartbeat(&HeartbeatParams {
            job_id: queued.id,
            by: old.by.clone(),
            visibility_timeout: VISIBILITY,
            now,
        })
        .await
        .unwrap());
    assert!(!driver
        .job_nack(&NackParams {
            job_id: queued.id,
            by: old.by.clone(),
            target: NackTarget::DeadLetter,
            run_at: now,
            counts_as_attempt: true,
            error: Some("stale".into()),
            error_code: None,
            now,
        })
        .await
        .unwrap());
    assert_eq!(kit.job(queued.id).await.state, JobState::Running);
    assert_eq!(kit.job(queued.id).await.last_error, None);

    assert!(driver.job_ack(&ack(new.by.clone())).await.unwrap());
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    assert!(!driver.job_ack(&ack(new.by)).await.unwrap(), "once only");
}

// ---- shutdown ----------------------------------------------------------------------------

#[tokio::test]
async fn a_started_worker_runs_new_jobs_and_their_due_retries() {
    let kit = TestKit::new();
    let handle = kit.worker().start();
    let queued = FlakyOnce::enqueue(kit.jobs(), Item { id: 1 })
        .await
        .unwrap();
    // The loop waits on the test clock: move it a poll interval at a time until the job,
    // its 1 s backoff and its second attempt are through.
    wait_until("the job is done", || {
        kit.advance(Duration::from_millis(250));
        let jobs = kit.jobs().clone();
        async move { jobs.job(queued.id).await.unwrap().unwrap().state == JobState::Done }
    })
    .await;
    let row = kit.job(queued.id).await;
    assert_eq!(row.attempt, 2);
    // Completed: the first attempt's failure is counted below, not kept on the row.
    assert_eq!(row.last_error, None);
    let stats = kit.worker().stats();
    assert_eq!((stats.retried, stats.completed), (1, 1));
    let report = bounded("shutdown", handle.shutdown()).await;
    assert_eq!(report.interrupted, 0);
}

#[tokio::test]
async fn shutdown_lets_a_running_job_finish() {
    let (kit, gate) = gated_kit(|w| w);
    let queued = Gated::enqueue(kit.jobs(), Item { id: 1 }).await.unwrap();
    let handle = kit.worker().start();
    wait_until("the job started", || async {
        gate.started.load(Ordering::SeqCst) == 1
    })
    .await;

    let shutdown = tokio::spawn(handle.shutdown());
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
    assert!(
        !shutdown.is_finished(),
        "shutdown waits for the running job"
    );
    assert_eq!(kit.job(queued.id).await.state, JobState::Running);

    gate.release.notify_one();
    let report = bounded("shutdown", shutdown).await.unwrap();
    assert_eq!(report.interrupted, 0);
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(row.attempt, 1);
    assert!(!gate.cancelled.load(Ordering::SeqCst));

    // Nothing claims after shutdown.
    let later = Quick::enqueue(kit.jobs(), Item { id: 9 }).await.unwrap();
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert_eq!(kit.job(later.id).await.state, JobState::Ready);
}

#[tokio::test]
async fn shutdown_hands_back_a_job_still_running_at_the_deadline_uncounted() {
    let deadline = Duration::from_secs(5);
    let (kit, gate) = gated_kit(|w| w.shutdown_deadline(deadline));
    let queued = Gated::enqueue(kit.jobs(), Item { id: 1 }).await.unwrap();
    let handle = kit.worker().start();
    wait_until("the job started", || async {
        gate.started.load(Ordering::SeqCst) == 1
    })
    .await;

    let shutdown = tokio::spawn(handle.shutdown());
    // Move the test clock until the shutdown deadline passes (the job never finishes).
    wait_until("the shutdown returned", || {
        let done = shutdown.is_finished();
        if !done {
            kit.advance(deadline);
        }
        async move { done }
    })
    .await;
    let report = shutdown.await.unwrap();
    assert_eq!(report.interrupted, 1);

    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Ready);
    assert_eq!(row.attempt, 0, "an interrupted attempt is not counted");
    assert_eq!(row.last_error_code.as_deref(), Some("X_DRAINING"));
    assert_eq!(row.run_at, kit.jobs().now(), "due again at once");
    assert_eq!(kit.worker().stats().interrupted, 1);
    wait_until("the body saw its cancellation", || async {
        gate.cancelled.load(Ordering::SeqCst)
    })
    .await;
    assert_eq!(gate.finished.load(Ordering::SeqCst), 0);
}

// ---- one parse per attempt ---------------------------------------------------------------

/// How often the worker deserialized each `Counted` input, by id (ids are unique per test).
static PARSES: Mutex<Vec<(u64, u32)>> = Mutex::new(Vec::new());

fn parses(id: u64) -> u32 {
    let parses = PARSES.lock().unwrap();
    parses
        .iter()
        .find(|(seen, _)| *seen == id)
        .map_or(0, |(_, n)| *n)
}

/// An input that counts its own deserializations: a tenant field, a concurrency key field.
#[derive(Debug, Serialize, JsonSchema)]
struct Counted {
    id: u64,
    org: String,
}

impl<'de> Deserialize<'de> for Counted {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Fields {
            id: u64,
            org: String,
        }
        let Fields { id, org } = Fields::deserialize(deserializer)?;
        let mut parses = PARSES.lock().unwrap();
        match parses.iter_mut().find(|(seen, _)| *seen == id) {
            Some((_, n)) => *n += 1,
            None => parses.push((id, 1)),
        }
        Ok(Counted { id, org })
    }
}

#[job(key = "counted:{id}", tenant = org)]
async fn counted_plain(run: Run, input: Counted) -> Result<u64, JobError> {
    assert_eq!(run.tenant(), Some(input.org.as_str()));
    Ok(input.id)
}

#[job(
    key = "counted-keyed:{id}",
    tenant = org,
    concurrency(key = "{org}", limit = 1, when_busy = wait)
)]
async fn counted_keyed(_run: Run, input: Counted) -> Result<u64, JobError> {
    Ok(input.id)
}

#[job(
    key = "counted-retried:{id}",
    tenant = org,
    retry(attempts = 2, delay = "1s", jitter = none)
)]
async fn counted_retried(run: Run, _input: Counted) -> Result<u32, JobError> {
    if run.attempt() == 1 {
        return Err(JobError::retryable("first attempt fails"));
    }
    Ok(run.attempt())
}

/// `(id, tenant, outcome)` for an ending the counted hook heard.
type CountedEnding = (Option<u64>, Option<String>, Outcome);

static COUNTED_ENDINGS: Mutex<Vec<CountedEnding>> = Mutex::new(Vec::new());

async fn on_counted(settled: Settled<Counted, u64>) -> Result<(), JobError> {
    COUNTED_ENDINGS.lock().unwrap().push((
        settled.input.map(|input| input.id),
        settled.tenant,
        settled.outcome,
    ));
    Ok(())
}

#[job(key = "counted-hooked:{id}", tenant = org, on_settled = on_counted)]
async fn counted_hooked(_run: Run, input: Counted) -> Result<u64, JobError> {
    Ok(input.id)
}

#[tokio::test]
async fn an_attempt_parses_its_input_once_for_tenant_key_and_body() {
    let kit = TestKit::new();
    let org = || "acme".to_string();
    let plain = CountedPlain::enqueue(
        kit.jobs(),
        Counted {
            id: 1001,
            org: org(),
        },
    )
    .await
    .unwrap();
    let keyed = CountedKeyed::enqueue(
        kit.jobs(),
        Counted {
            id: 1002,
            org: org(),
        },
    )
    .await
    .unwrap();
    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 2);
    assert!(executions
        .iter()
        .all(|e| e.outcome == ExecutionOutcome::Completed));
    assert_eq!(kit.job(plain.id).await.state, JobState::Done);
    assert_eq!(kit.job(keyed.id).await.state, JobState::Done);
    assert_eq!(parses(1001), 1, "tenant and body from one parse");
    assert_eq!(
        parses(1002),
        1,
        "tenant, concurrency key and body from one parse"
    );
}

#[tokio::test]
async fn each_attempt_parses_its_input_once() {
    let kit = TestKit::new();
    let queued = CountedRetried::enqueue(
        kit.jobs(),
        Counted {
            id: 1003,
            org: "acme".into(),
        },
    )
    .await
    .unwrap();
    let first = kit.run_until_idle().await;
    assert_eq!(first[0].outcome, ExecutionOutcome::Retried);
    assert_eq!(parses(1003), 1);
    kit.advance(Duration::from_secs(1));
    let second = kit.run_until_idle().await;
    assert_eq!(second[0].outcome, ExecutionOutcome::Completed);
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    assert_eq!(parses(1003), 2, "one parse per attempt");
}

#[tokio::test]
async fn the_on_settled_hook_parses_its_own_copy_only() {
    let kit = TestKit::new();
    CountedHooked::enqueue(
        kit.jobs(),
        Counted {
            id: 1004,
            org: "acme".into(),
        },
    )
    .await
    .unwrap();
    let executions = kit.run_until_idle().await;
    assert_eq!(executions[0].outcome, ExecutionOutcome::Completed);
    assert!(!executions[0].on_settled_failed);
    let endings = COUNTED_ENDINGS.lock().unwrap().clone();
    assert!(
        endings.contains(&(Some(1004), Some("acme".into()), Outcome::Completed)),
        "{endings:?}"
    );
    // The body owns the attempt's parse (an input need not be `Clone`): the hook parses one
    // more copy, and nothing else parses again.
    assert_eq!(parses(1004), 2);
}
