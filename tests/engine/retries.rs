//! Retries: backoff curves and jitter, exhaustion, terminal errors, `dead_letter = false`,
//! stated delays, `final_attempt`, the job timeout, and the `on_settled` hook.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use jobs::prelude::*;
use jobs::testing::TestKit;
use jobs::{ErrorClass, ExecutionOutcome, JobExecution};

use crate::support::time::elapsed;
use crate::support::wait::{bounded, wait_until};

/// Fail the first `fail_times` attempts, then succeed with the attempt number.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Plan {
    id: u64,
    fail_times: u32,
}

fn plan(id: u64, fail_times: u32) -> Plan {
    Plan { id, fail_times }
}

fn fail_or_succeed(run: &Run, input: &Plan) -> Result<u32, JobError> {
    if run.attempt() <= input.fail_times {
        Err(JobError::retryable(format!(
            "boom on attempt {}",
            run.attempt()
        )))
    } else {
        Ok(run.attempt())
    }
}

#[job(key = "exp:{id}", tenant = none, retry(attempts = 3, backoff = exponential, delay = "10s", jitter = none))]
async fn exponential_job(run: Run, input: Plan) -> Result<u32, JobError> {
    fail_or_succeed(&run, &input)
}

#[job(key = "lin:{id}", tenant = none, retry(attempts = 4, backoff = linear, delay = "10s", jitter = none))]
async fn linear_job(run: Run, input: Plan) -> Result<u32, JobError> {
    fail_or_succeed(&run, &input)
}

#[job(key = "fix:{id}", tenant = none, retry(attempts = 4, backoff = fixed, delay = "10s", jitter = none))]
async fn fixed_job(run: Run, input: Plan) -> Result<u32, JobError> {
    fail_or_succeed(&run, &input)
}

#[job(key = "capped:{id}", tenant = none, retry(attempts = 5, backoff = exponential, delay = "10s", max_delay = "25s", jitter = none))]
async fn capped_job(run: Run, input: Plan) -> Result<u32, JobError> {
    fail_or_succeed(&run, &input)
}

/// Default jitter (`equal`).
#[job(key = "eq:{id}", tenant = none, retry(attempts = 3, backoff = exponential, delay = "10s"))]
async fn equal_jitter_job(run: Run, input: Plan) -> Result<u32, JobError> {
    fail_or_succeed(&run, &input)
}

#[job(key = "ex:{id}", tenant = none, retry(attempts = 2, delay = "1s", jitter = none))]
async fn exhausted_job(run: Run, input: Plan) -> Result<u32, JobError> {
    fail_or_succeed(&run, &input)
}

static TERMINAL_CALLS: AtomicU32 = AtomicU32::new(0);

#[job(key = "term:{id}", tenant = none, retry(attempts = 5))]
async fn terminal_job(_run: Run, _input: Plan) -> Result<(), JobError> {
    TERMINAL_CALLS.fetch_add(1, Ordering::SeqCst);
    Err(JobError::terminal("card declined"))
}

#[job(key = "drop:{id}", tenant = none, retry(attempts = 2, delay = "1s", jitter = none), dead_letter = false)]
async fn dropped_job(run: Run, input: Plan) -> Result<u32, JobError> {
    fail_or_succeed(&run, &input)
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Throttle {
    id: u64,
    after_secs: u64,
}

#[job(key = "throttle:{id}", tenant = none, retry(attempts = 3, max_delay = "1m", jitter = none))]
async fn throttled_job(run: Run, input: Throttle) -> Result<(), JobError> {
    if run.attempt() == 1 {
        return Err(JobError::retry_after(
            "provider throttled us",
            Duration::from_secs(input.after_secs),
        ));
    }
    Ok(())
}

/// Returns the coded retry-after errors a responder's throttle maps to: `kind` 0 is
/// `X_RATE_LIMITED` with a stated 40 s, 1 is `X_OVERLOADED` with a stated 50 s, 2 is
/// `X_RATE_LIMITED` with no delay stated.
#[job(key = "coded:{id}", tenant = none, retry(attempts = 3, delay = "7s", backoff = fixed, max_delay = "1m", jitter = none))]
async fn coded_throttle_job(run: Run, input: Throttle) -> Result<(), JobError> {
    if run.attempt() > 1 {
        return Ok(());
    }
    Err(match input.after_secs {
        0 => JobError::new(ErrorCode::RateLimited, "the provider answered 429")
            .with_retry_after(Duration::from_secs(40)),
        1 => JobError::new(ErrorCode::Overloaded, "the provider answered 503")
            .with_retry_after(Duration::from_secs(50)),
        _ => JobError::new(ErrorCode::RateLimited, "the provider answered 429"),
    })
}

static FINAL_ATTEMPTS: Mutex<Vec<(u32, bool)>> = Mutex::new(Vec::new());

#[job(key = "final:{id}", tenant = none, retry(attempts = 3, delay = "1s", jitter = none))]
async fn final_attempt_job(run: Run, _input: Plan) -> Result<(), JobError> {
    FINAL_ATTEMPTS
        .lock()
        .unwrap()
        .push((run.attempt(), run.final_attempt()));
    Err(JobError::retryable("always"))
}

static TIMEOUT_BODY_CANCELLED: AtomicBool = AtomicBool::new(false);

#[job(key = "slow:{id}", tenant = none, timeout = "10s", retry(attempts = 2, delay = "1s", jitter = none))]
async fn slow_job(run: Run, _input: Plan) -> Result<(), JobError> {
    let watcher = run.clone();
    tokio::spawn(async move {
        watcher.cancelled().await;
        TIMEOUT_BODY_CANCELLED.store(true, Ordering::SeqCst);
    });
    std::future::pending::<()>().await;
    Ok(())
}

// ---- on_settled -------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
struct Seen {
    outcome: Outcome,
    job_id: uuid::Uuid,
    input_id: Option<u64>,
    result: Option<u64>,
    error: Option<String>,
    code: Option<ErrorCode>,
}

static SETTLED: Mutex<Vec<Seen>> = Mutex::new(Vec::new());

fn record<O: Copy + Into<u64>>(settled: &Settled<Plan, O>) {
    SETTLED.lock().unwrap().push(Seen {
        outcome: settled.outcome,
        job_id: settled.job_id,
        input_id: settled.input.as_ref().map(|i| i.id),
        result: settled.result.map(Into::into),
        error: settled.error.clone(),
        code: settled.code,
    });
}

fn settled_for(job_id: uuid::Uuid) -> Vec<Seen> {
    SETTLED
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.job_id == job_id)
        .cloned()
        .collect()
}

async fn on_ok_settled(settled: Settled<Plan, u32>) -> Result<(), JobError> {
    record(&settled);
    Ok(())
}

#[job(key = "settle-ok:{id}", tenant = none, on_settled = on_ok_settled)]
async fn settle_ok_job(_run: Run, input: Plan) -> Result<u32, JobError> {
    Ok(input.id as u32 * 2)
}

async fn on_dead_settled(settled: Settled<Plan, u32>) -> Result<(), JobError> {
    record(&settled);
    Ok(())
}

#[job(key = "settle-dead:{id}", tenant = none, retry(attempts = 2, delay = "1s", jitter = none), on_settled = on_dead_settled)]
async fn settle_dead_job(_run: Run, _input: Plan) -> Result<u32, JobError> {
    Err(JobError::new(ErrorCode::Timeout, "upstream timed out"))
}

async fn on_dropped_settled(settled: Settled<Plan, u32>) -> Result<(), JobError> {
    record(&settled);
    Ok(())
}

#[job(key = "settle-drop:{id}", tenant = none, retry(attempts = 3), dead_letter = false, on_settled = on_dropped_settled)]
async fn settle_dropped_job(_run: Run, _input: Plan) -> Result<u32, JobError> {
    Err(JobError::terminal("refused by the provider"))
}

static FAILING_HOOK_CALLS: AtomicU32 = AtomicU32::new(0);

async fn failing_hook(_settled: Settled<Plan, ()>) -> Result<(), JobError> {
    FAILING_HOOK_CALLS.fetch_add(1, Ordering::SeqCst);
    Err(JobError::retryable("the audit log is down"))
}

#[job(key = "hook-fails:{id}", tenant = none, on_settled = failing_hook)]
async fn hook_fails_job(_run: Run, _input: Plan) -> Result<(), JobError> {
    Ok(())
}

// ---- helpers -----------------------------------------------------------------------------

/// Runs a job through its retries. After every failed attempt: the row is `ready` with its
/// `run_at` one delay ahead, and nothing is claimed before then. Answers the delays and every
/// execution.
async fn drive(kit: &TestKit, id: uuid::Uuid) -> (Vec<Duration>, Vec<JobExecution>) {
    let mut delays = Vec::new();
    let mut executions = Vec::new();
    loop {
        let pass = kit.run_until_idle().await;
        assert_eq!(pass.len(), 1, "one attempt per due time");
        executions.extend(pass);
        let row = kit.job(id).await;
        if row.state != JobState::Ready {
            return (delays, executions);
        }
        let now = kit.jobs().now();
        let delay = elapsed(now, row.run_at);
        assert_eq!(
            executions.last().unwrap().resume_at,
            Some(row.run_at),
            "the execution reports when it is due again"
        );
        delays.push(delay);
        kit.advance(delay - Duration::from_millis(1));
        assert!(
            kit.run_until_idle().await.is_empty(),
            "claimed before its backoff passed"
        );
        kit.clock().set(row.run_at);
    }
}

fn secs(list: &[u64]) -> Vec<Duration> {
    list.iter().copied().map(Duration::from_secs).collect()
}

// ---- tests -------------------------------------------------------------------------------

#[tokio::test]
async fn failing_twice_then_succeeding_ends_done_after_three_attempts() {
    let kit = TestKit::new();
    let queued = ExponentialJob::enqueue(kit.jobs(), plan(1, 2))
        .await
        .unwrap();
    let (delays, executions) = drive(&kit, queued.id).await;
    assert_eq!(delays, secs(&[10, 20]));
    let outcomes: Vec<_> = executions.iter().map(|e| (e.attempt, e.outcome)).collect();
    assert_eq!(
        outcomes,
        [
            (1, ExecutionOutcome::Retried),
            (2, ExecutionOutcome::Retried),
            (3, ExecutionOutcome::Completed)
        ]
    );
    assert_eq!(executions[0].error.as_deref(), Some("boom on attempt 1"));
    assert_eq!(executions[1].error.as_deref(), Some("boom on attempt 2"));
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(row.attempt, 3);
    // The failures are the executions' (and the step records'); a completed job carries none.
    assert_eq!(row.last_error, None);
    assert_eq!(row.last_error_code, None);
}

#[tokio::test]
async fn linear_and_fixed_backoff_follow_their_curves() {
    let kit = TestKit::new();
    let linear = LinearJob::enqueue(kit.jobs(), plan(1, 3)).await.unwrap();
    let (delays, _) = drive(&kit, linear.id).await;
    assert_eq!(delays, secs(&[10, 20, 30]));
    assert_eq!(kit.job(linear.id).await.state, JobState::Done);

    let fixed = FixedJob::enqueue(kit.jobs(), plan(1, 3)).await.unwrap();
    let (delays, _) = drive(&kit, fixed.id).await;
    assert_eq!(delays, secs(&[10, 10, 10]));
    assert_eq!(kit.job(fixed.id).await.attempt, 4);
}

#[tokio::test]
async fn backoff_is_capped_at_max_delay() {
    let kit = TestKit::new();
    let queued = CappedJob::enqueue(kit.jobs(), plan(1, 4)).await.unwrap();
    let (delays, _) = drive(&kit, queued.id).await;
    assert_eq!(delays, secs(&[10, 20, 25, 25]));
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
}

#[tokio::test]
async fn equal_jitter_stays_in_the_upper_half_of_the_delay() {
    let kit = TestKit::new();
    for id in 0..20 {
        let queued = EqualJitterJob::enqueue(kit.jobs(), plan(id, 2))
            .await
            .unwrap();
        let (delays, _) = drive(&kit, queued.id).await;
        assert_eq!(delays.len(), 2);
        for (delay, full) in delays.iter().zip(secs(&[10, 20])) {
            assert!(
                *delay >= full / 2 && *delay <= full,
                "{delay:?} outside [{:?}, {full:?}]",
                full / 2
            );
        }
        assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    }
}

#[tokio::test]
async fn exhausting_attempts_dead_letters() {
    let kit = TestKit::new();
    let queued = ExhaustedJob::enqueue(kit.jobs(), plan(1, 99))
        .await
        .unwrap();
    let executions = kit.run_to_completion().await;
    assert_eq!(executions.len(), 2);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Retried);
    assert_eq!(executions[1].outcome, ExecutionOutcome::DeadLettered);
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(row.attempt, 2);
    let last_error = row.last_error.unwrap();
    assert!(last_error.contains("boom on attempt 2"), "{last_error}");
    assert!(last_error.contains("attempts exhausted"), "{last_error}");
    assert!(last_error.contains("2 of 2 attempts spent"), "{last_error}");
    // Out of attempts: the ending's code is X_JOB_MAX_ATTEMPTS, in the report and on the row.
    assert_eq!(executions[1].code, Some(ErrorCode::JobMaxAttempts));
    assert_eq!(row.last_error_code.as_deref(), Some("X_JOB_MAX_ATTEMPTS"));
    assert_eq!(kit.worker().stats().dead_lettered, 1);

    // A dead row no longer holds its key.
    let again = ExhaustedJob::enqueue(kit.jobs(), plan(1, 0)).await.unwrap();
    assert!(!again.deduped);
}

#[tokio::test]
async fn a_terminal_error_dead_letters_on_the_first_attempt() {
    let kit = TestKit::new();
    let queued = TerminalJob::enqueue(kit.jobs(), plan(1, 0)).await.unwrap();
    let executions = kit.run_to_completion().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::DeadLettered);
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(row.attempt, 1, "remaining attempts are unspent");
    assert_eq!(row.max_attempts, 5);
    let last_error = row.last_error.unwrap();
    assert!(last_error.contains("card declined"), "{last_error}");
    assert!(last_error.contains("terminal"), "{last_error}");
    // A terminal error keeps its own code: the attempts did not run out.
    assert_ne!(row.last_error_code.as_deref(), Some("X_JOB_MAX_ATTEMPTS"));
    assert_eq!(TERMINAL_CALLS.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn dead_letter_false_settles_failed() {
    let kit = TestKit::new();
    let queued = DroppedJob::enqueue(kit.jobs(), plan(1, 99)).await.unwrap();
    let executions = kit.run_to_completion().await;
    assert_eq!(executions.len(), 2);
    assert_eq!(executions[1].outcome, ExecutionOutcome::Dropped);
    assert_eq!(executions[1].code, Some(ErrorCode::JobMaxAttempts));
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Failed);
    assert_eq!(row.attempt, 2);
    assert_eq!(row.last_error_code.as_deref(), Some("X_JOB_MAX_ATTEMPTS"));
    assert!(row.last_error.unwrap().contains("attempts exhausted"));
    assert_eq!(kit.worker().stats().dropped, 1);
    assert_eq!(kit.worker().stats().dead_lettered, 0);
}

#[tokio::test]
async fn retry_after_uses_the_stated_delay_clamped_by_max_delay() {
    let kit = TestKit::new();
    let short = ThrottledJob::enqueue(
        kit.jobs(),
        Throttle {
            id: 1,
            after_secs: 30,
        },
    )
    .await
    .unwrap();
    let long = ThrottledJob::enqueue(
        kit.jobs(),
        Throttle {
            id: 2,
            after_secs: 600,
        },
    )
    .await
    .unwrap();
    let now = kit.jobs().now();
    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 2);
    assert!(executions
        .iter()
        .all(|e| e.outcome == ExecutionOutcome::Retried));

    let short_row = kit.job(short.id).await;
    assert_eq!(short_row.state, JobState::Ready);
    assert_eq!(short_row.attempt, 1, "a stated delay is still an attempt");
    assert_eq!(elapsed(now, short_row.run_at), Duration::from_secs(30));
    let long_row = kit.job(long.id).await;
    assert_eq!(elapsed(now, long_row.run_at), Duration::from_secs(60));

    kit.run_to_completion().await;
    assert_eq!(kit.job(short.id).await.state, JobState::Done);
    assert_eq!(kit.job(long.id).await.state, JobState::Done);
    assert_eq!(kit.job(long.id).await.attempt, 2);
}

/// `X_RATE_LIMITED` and `X_OVERLOADED` are classed retry-after, as the reference classes them:
/// the stated delay, not the backoff; with no delay stated, the backoff.
#[tokio::test]
async fn rate_limited_and_overloaded_codes_retry_after_the_stated_delay() {
    assert!(matches!(
        ErrorCode::RateLimited.class(),
        ErrorClass::RetryAfter(_)
    ));
    assert!(matches!(
        ErrorCode::Overloaded.class(),
        ErrorClass::RetryAfter(_)
    ));
    let kit = TestKit::new();
    let mut ids = Vec::new();
    for kind in 0..3 {
        let input = Throttle {
            id: kind,
            after_secs: kind,
        };
        ids.push(
            CodedThrottleJob::enqueue(kit.jobs(), input)
                .await
                .unwrap()
                .id,
        );
    }
    let now = kit.jobs().now();
    let executions = kit.run_until_idle().await;
    assert_eq!(executions.len(), 3);
    let mut waited = Vec::new();
    for id in &ids {
        let row = kit.job(*id).await;
        assert_eq!(row.state, JobState::Ready);
        assert_eq!(row.attempt, 1, "a stated delay is still an attempt");
        waited.push(elapsed(now, row.run_at));
    }
    assert_eq!(waited, [40, 50, 7].map(Duration::from_secs));
    let rate_limited = kit.job(ids[0]).await;
    assert_eq!(
        rate_limited.last_error_code.as_deref(),
        Some("X_RATE_LIMITED")
    );
    kit.run_to_completion().await;
    for id in &ids {
        assert_eq!(kit.job(*id).await.state, JobState::Done);
    }
}

#[tokio::test]
async fn final_attempt_is_true_only_on_the_last_attempt() {
    let kit = TestKit::new();
    let queued = FinalAttemptJob::enqueue(kit.jobs(), plan(1, 0))
        .await
        .unwrap();
    kit.run_to_completion().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Dead);
    assert_eq!(
        *FINAL_ATTEMPTS.lock().unwrap(),
        [(1, false), (2, false), (3, true)]
    );
}

#[tokio::test]
async fn the_job_timeout_cancels_the_body_then_fails_the_attempt() {
    let kit = TestKit::new();
    let queued = SlowJob::enqueue(kit.jobs(), plan(1, 0)).await.unwrap();
    let worker = kit.worker().clone();
    let pass = tokio::spawn(async move { worker.tick().await });

    // The heartbeat and the timeout are both armed on the test clock.
    wait_until("the timeout timer is armed", || async {
        kit.clock().pending_timers() >= 2
    })
    .await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Running);
    kit.advance(Duration::from_secs(10));

    let executions = bounded("the timed-out pass", pass).await.unwrap().unwrap();
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Retried);
    assert_eq!(executions[0].code, Some(ErrorCode::JobTimeout));
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Ready);
    assert_eq!(row.attempt, 1);
    assert_eq!(row.last_error_code.as_deref(), Some("X_JOB_TIMEOUT"));
    assert!(row.last_error.unwrap().contains("timeout of 10s"));
    wait_until("the body saw its cancellation", || async {
        TIMEOUT_BODY_CANCELLED.load(Ordering::SeqCst)
    })
    .await;
}

#[tokio::test]
async fn on_settled_hears_completed_with_the_typed_result() {
    let kit = TestKit::new();
    let queued = SettleOkJob::enqueue(kit.jobs(), plan(21, 0)).await.unwrap();
    let executions = kit.run_to_completion().await;
    assert!(!executions[0].on_settled_failed);
    assert_eq!(
        settled_for(queued.id),
        [Seen {
            outcome: Outcome::Completed,
            job_id: queued.id,
            input_id: Some(21),
            result: Some(42),
            error: None,
            code: None,
        }]
    );
}

#[tokio::test]
async fn on_settled_hears_dead_lettered_with_its_code_and_not_the_retries() {
    let kit = TestKit::new();
    let queued = SettleDeadJob::enqueue(kit.jobs(), plan(1, 0))
        .await
        .unwrap();
    kit.run_until_idle().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Ready);
    assert!(
        settled_for(queued.id).is_empty(),
        "a retry is not an ending"
    );

    kit.run_to_completion().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Dead);
    let seen = settled_for(queued.id);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].outcome, Outcome::DeadLettered);
    // Out of attempts: the ending's code is X_JOB_MAX_ATTEMPTS, the last error (its own code
    // with it) in the message.
    assert_eq!(seen[0].code, Some(ErrorCode::JobMaxAttempts));
    assert_eq!(seen[0].input_id, Some(1));
    assert_eq!(seen[0].result, None);
    let error = seen[0].error.clone().unwrap();
    assert!(error.contains("X_TIMEOUT: upstream timed out"), "{error}");
}

#[tokio::test]
async fn on_settled_hears_dropped() {
    let kit = TestKit::new();
    let queued = SettleDroppedJob::enqueue(kit.jobs(), plan(5, 0))
        .await
        .unwrap();
    kit.run_to_completion().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Failed);
    let seen = settled_for(queued.id);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].outcome, Outcome::Dropped);
    assert_eq!(seen[0].code, None);
    assert!(seen[0]
        .error
        .as_deref()
        .unwrap()
        .contains("refused by the provider"));
}

#[tokio::test]
async fn a_hook_failing_every_time_is_tried_three_times_and_reported() {
    let kit = TestKit::new();
    let queued = HookFailsJob::enqueue(kit.jobs(), plan(1, 0)).await.unwrap();
    let executions = kit.run_to_completion().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Completed);
    assert!(executions[0].on_settled_failed);
    assert_eq!(FAILING_HOOK_CALLS.load(Ordering::SeqCst), 3);
    assert_eq!(jobs::ON_SETTLED_ATTEMPTS, 3);
    let row = kit.job(queued.id).await;
    assert_eq!(row.state, JobState::Done, "the row stays done");
    assert_eq!(row.last_error, None);
}
