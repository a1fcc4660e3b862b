//! Durable steps: persisted before they return, replayed on later attempts, unique names,
//! sleeps that park the run without spending an attempt, serializability and step timeouts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use jobs::driver::StepStatus;
use jobs::prelude::*;
use jobs::testing::TestKit;
use jobs::ExecutionOutcome;

use crate::support::time::elapsed;
use crate::support::wait::{bounded, wait_until};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Item {
    id: u64,
}

static CHARGES: AtomicU32 = AtomicU32::new(0);

/// Charges once in a step, then fails its first attempt after the step.
#[job(key = "replay:{id}", tenant = none, retry(attempts = 3, delay = "1s", jitter = none))]
async fn replayed(run: Run, input: Item) -> Result<String, JobError> {
    let receipt: String = run
        .step("charge", async {
            CHARGES.fetch_add(1, Ordering::SeqCst);
            Ok::<_, JobError>(format!("rcpt-{}", input.id))
        })
        .await?;
    if run.attempt() == 1 {
        return Err(JobError::retryable("crashed after the charge"));
    }
    Ok(receipt)
}

/// Builds the same step name twice at run time.
#[job(key = "dup:{id}", tenant = none)]
async fn duplicated(run: Run, input: Item) -> Result<(), JobError> {
    for _ in 0..2 {
        let name = format!("item-{}", input.id);
        run.step(&name, async { Ok::<_, JobError>(()) }).await?;
    }
    Ok(())
}

#[job(key = "sleeper:{id}", tenant = none)]
async fn sleeper(run: Run, _input: Item) -> Result<(), JobError> {
    run.step("before", async { Ok::<_, JobError>(1u8) }).await?;
    run.sleep("3d").await?;
    run.step("after", async { Ok::<_, JobError>(2u8) }).await?;
    Ok(())
}

#[job(key = "twice:{id}", tenant = none)]
async fn sleeps_twice(run: Run, _input: Item) -> Result<(), JobError> {
    run.sleep("3d").await?;
    run.step("between", async { Ok::<_, JobError>(()) }).await?;
    run.sleep("3d").await?;
    Ok(())
}

#[job(key = "unserializable:{id}", tenant = none)]
async fn unserializable(run: Run, _input: Item) -> Result<(), JobError> {
    let _grid: HashMap<(u8, u8), u8> = run
        .step("grid", async {
            Ok::<_, JobError>(HashMap::from([((1u8, 2u8), 3u8)]))
        })
        .await?;
    Ok(())
}

#[job(key = "step-timeout:{id}", tenant = none, step_timeout = "5s", retry(attempts = 1))]
async fn step_times_out(run: Run, _input: Item) -> Result<(), JobError> {
    run.step("hangs", async {
        std::future::pending::<()>().await;
        Ok::<_, JobError>(())
    })
    .await
}

/// A duration read at run time (from the input here; from configuration alike).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Nap {
    id: u64,
    every: String,
}

#[job(key = "nap:{id}", tenant = none, retry(attempts = 3))]
async fn computed_nap(run: Run, input: Nap) -> Result<(), JobError> {
    run.sleep(&input.every).await
}

#[job(key = "wait:{id}", tenant = none, retry(attempts = 3))]
async fn computed_wait(run: Run, input: Nap) -> Result<(), JobError> {
    let _paid: Option<u8> = run.wait_for_event("paid", "order", &input.every).await?;
    Ok(())
}

#[tokio::test]
async fn a_step_is_persisted_before_it_returns_and_replayed_on_the_next_attempt() {
    let kit = TestKit::new();
    let queued = Replayed::enqueue(kit.jobs(), Item { id: 7 }).await.unwrap();

    let first = kit.run_until_idle().await;
    assert_eq!(first[0].outcome, ExecutionOutcome::Retried);
    // The attempt failed, but the step's output is already stored.
    let steps = kit.steps(queued.run_id).await;
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].name, "charge");
    assert_eq!(steps[0].status, StepStatus::Completed);
    assert_eq!(steps[0].output, Some(serde_json::json!("rcpt-7")));
    assert_eq!(kit.step_runs(queued.run_id, "charge"), 1);

    let rest = kit.run_to_completion().await;
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].attempt, 2);
    assert_eq!(rest[0].outcome, ExecutionOutcome::Completed);
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    assert_eq!(
        kit.step_runs(queued.run_id, "charge"),
        1,
        "replayed, not re-run"
    );
    assert_eq!(CHARGES.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_repeated_dynamic_step_name_is_a_terminal_duplicate() {
    let kit = TestKit::new();
    let queued = Duplicated::enqueue(kit.jobs(), Item { id: 3 })
        .await
        .unwrap();
    let executions = kit.run_to_completion().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::DeadLettered);
    assert_eq!(executions[0].code, Some(ErrorCode::StepDuplicate));
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(row.attempt, 1);
    assert_eq!(row.last_error_code.as_deref(), Some("X_STEP_DUPLICATE"));
    assert!(row.last_error.unwrap().contains("item-3"));
    assert_eq!(kit.step_runs(queued.run_id, "item-3"), 1);
}

#[tokio::test]
async fn sleep_parks_the_run_without_spending_an_attempt() {
    let kit = TestKit::new();
    let start = kit.jobs().now();
    let queued = Sleeper::enqueue(kit.jobs(), Item { id: 1 }).await.unwrap();

    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Suspended);
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Suspended);
    assert_eq!(row.attempt, 0, "a suspension is not an attempt");
    assert_eq!(elapsed(start, row.run_at), Duration::from_secs(3 * 86_400));
    assert_eq!(executions[0].resume_at, Some(row.run_at));
    assert_eq!(kit.step_runs(queued.run_id, "before"), 1);
    assert_eq!(kit.step_runs(queued.run_id, "after"), 0);
    let sleep = kit
        .steps(queued.run_id)
        .await
        .into_iter()
        .find(|s| s.name == "sleep:3days")
        .expect("the sleep is a step");
    assert_eq!(sleep.status, StepStatus::Sleeping);
    assert_eq!(sleep.wake_at, Some(row.run_at));

    kit.advance(Duration::from_secs(3 * 86_400 - 1));
    assert!(kit.run_until_idle().await.is_empty(), "woke before 3 days");
    assert_eq!(kit.job(queued.id).await.state, JobState::Suspended);

    kit.advance(Duration::from_secs(1));
    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Completed);
    assert_eq!(executions[0].attempt, 1);
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(row.attempt, 1);
    assert_eq!(kit.step_runs(queued.run_id, "before"), 1);
    assert_eq!(kit.step_runs(queued.run_id, "after"), 1);
}

#[tokio::test]
async fn two_sleeps_of_one_length_get_distinct_names() {
    let kit = TestKit::new();
    let start = kit.jobs().now();
    let queued = SleepsTwice::enqueue(kit.jobs(), Item { id: 1 })
        .await
        .unwrap();
    let executions = kit.run_to_completion().await;
    let outcomes: Vec<_> = executions.iter().map(|e| e.outcome).collect();
    assert_eq!(
        outcomes,
        [
            ExecutionOutcome::Suspended,
            ExecutionOutcome::Suspended,
            ExecutionOutcome::Completed
        ]
    );
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(row.attempt, 1);
    assert_eq!(
        elapsed(start, kit.jobs().now()),
        Duration::from_secs(6 * 86_400)
    );
    let mut names: Vec<_> = kit
        .steps(queued.run_id)
        .await
        .into_iter()
        .map(|s| {
            assert_eq!(s.status, StepStatus::Completed, "{}", s.name);
            s.name
        })
        .collect();
    names.sort();
    assert_eq!(names, ["between", "sleep:3days", "sleep:3days#2"]);
    assert_eq!(kit.step_runs(queued.run_id, "between"), 1);
}

#[tokio::test]
async fn an_output_that_cannot_be_serialized_is_refused() {
    let kit = TestKit::new();
    let queued = Unserializable::enqueue(kit.jobs(), Item { id: 1 })
        .await
        .unwrap();
    let executions = kit.run_to_completion().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(
        executions[0].code,
        Some(ErrorCode::StepOutputUnserializable)
    );
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(
        row.last_error_code.as_deref(),
        Some("X_STEP_OUTPUT_UNSERIALIZABLE")
    );
    assert!(
        !kit.steps(queued.run_id)
            .await
            .iter()
            .any(|s| s.status == StepStatus::Completed),
        "nothing was stored as completed"
    );
}

#[tokio::test]
async fn step_timeout_fails_the_step() {
    let kit = TestKit::new();
    let queued = StepTimesOut::enqueue(kit.jobs(), Item { id: 1 })
        .await
        .unwrap();
    let worker = kit.worker().clone();
    let pass = tokio::spawn(async move { worker.tick().await });
    // The heartbeat (10 s) and the step ceiling (5 s).
    wait_until("the step ceiling is armed", || async {
        kit.clock().pending_timers() >= 2
    })
    .await;
    kit.advance(Duration::from_secs(5));
    let executions = bounded("the pass", pass).await.unwrap().unwrap();
    assert_eq!(executions.len(), 1);
    // Its one attempt spent on a retryable timeout: the ending is `X_JOB_MAX_ATTEMPTS`, the
    // timeout named in the message.
    assert_eq!(executions[0].code, Some(ErrorCode::JobMaxAttempts));
    assert_eq!(executions[0].outcome, ExecutionOutcome::DeadLettered);
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(row.last_error_code.as_deref(), Some("X_JOB_MAX_ATTEMPTS"));
    let last_error = row.last_error.unwrap();
    assert!(last_error.contains("X_JOB_TIMEOUT"), "{last_error}");
    assert!(last_error.contains("step `hangs`"), "{last_error}");
    let steps = kit.steps(queued.run_id).await;
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].status, StepStatus::Failed);
    assert!(steps[0].error.as_deref().unwrap().contains("X_JOB_TIMEOUT"));
}

/// A literal duration is checked at compile time (tests/ui/job/fail/body_*); a computed one
/// when the call runs: `X_INVARIANT`, terminal (the same value comes back on every attempt),
/// and the message names the call.
#[tokio::test]
async fn a_computed_duration_that_is_invalid_fails_the_run_for_good_naming_the_call() {
    let kit = TestKit::new();
    let nap = ComputedNap::enqueue(
        kit.jobs(),
        Nap {
            id: 1,
            every: "3 fortnights".into(),
        },
    )
    .await
    .unwrap();
    let wait = ComputedWait::enqueue(
        kit.jobs(),
        Nap {
            id: 2,
            every: "0s".into(),
        },
    )
    .await
    .unwrap();
    let executions = kit.run_to_completion().await;
    assert_eq!(executions.len(), 2, "one attempt each: {executions:?}");
    for (id, said) in [
        (
            nap.id,
            "`run.sleep` got an invalid duration `3 fortnights`: it does not parse",
        ),
        (
            wait.id,
            "`run.wait_for_event` got an invalid timeout `0s`: it is zero",
        ),
    ] {
        let execution = executions.iter().find(|e| e.job_id == id).unwrap();
        assert_eq!(execution.outcome, ExecutionOutcome::DeadLettered);
        assert_eq!(execution.code, Some(ErrorCode::Invariant));
        let row = kit.job(id).await;
        assert_eq!(row.state, JobState::Dead);
        assert_eq!(
            row.attempt, 1,
            "terminal: the two attempts left are not spent"
        );
        assert_eq!(row.last_error_code.as_deref(), Some("X_INVARIANT"));
        let error = row.last_error.unwrap();
        assert!(error.contains(said), "{error}");
        assert!(
            error.contains("pass a positive duration such as"),
            "{error}"
        );
    }
}
