//! Worker round trips over the driver: a [`Jobs`] client on a [`TestClock`] and a [`Worker`]
//! driven with `tick()`.
//!
//! The jobs below implement [`Job`] by hand rather than with `#[job]`: `#[job]` also submits
//! the job to the link-time registry, and this module is compiled into every test binary that
//! enables the `conformance` feature (cargo unifies features), where they would show up in
//! `Registry::global()` and `manifest()`. The workers here get an explicit [`Registry`].

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::*;
use crate::client::Jobs;
use crate::clock::TestClock;
use crate::descriptor::{Backoff, Jitter, JobDescriptor, RetryPolicy, TenantMode};
use crate::driver::StepListParams;
use crate::job::Job;
use crate::registry::Registry;
use crate::run::Run;
use crate::worker::{ExecutionOutcome, JobExecution, Worker};

/// The input of every conformance job.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Subject {
    /// Makes the idempotency key and, for the wait, the correlation key.
    pub key: String,
}

pub(super) fn subject(key: &str) -> Subject {
    Subject { key: key.into() }
}

pub(super) const fn descriptor(name: &'static str) -> JobDescriptor {
    let mut d = JobDescriptor::new(
        name,
        TenantMode::None,
        "Subject",
        crate::__private::input_schema::<Subject>,
    );
    d.queue = QUEUE;
    d
}

/// A step, a one-hour sleep, a second step.
#[derive(Debug)]
pub struct Trip;

impl Job for Trip {
    type Input = Subject;
    type Output = String;
    const DESCRIPTOR: JobDescriptor = descriptor("conformance.trip");

    fn idempotency_key(input: &Subject) -> String {
        format!("trip:{}", input.key)
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn run(run: Run, input: Subject) -> BoxFuture<'static, Result<String, JobError>> {
        Box::pin(async move {
            let sent: String = run
                .step("send", async move {
                    Ok::<_, JobError>(format!("msg-{}", input.key))
                })
                .await?;
            run.sleep("1h").await?;
            let followed: String = run
                .step("follow-up", async move {
                    Ok::<_, JobError>(format!("{sent}-2"))
                })
                .await?;
            Ok(followed)
        })
    }
}

/// Always fails (retryable): two attempts 10 s apart, then the dead letter.
#[derive(Debug)]
pub struct Flaky;

impl Job for Flaky {
    type Input = Subject;
    type Output = ();
    const DESCRIPTOR: JobDescriptor = {
        let mut d = descriptor("conformance.flaky");
        d.retry = RetryPolicy {
            attempts: 2,
            backoff: Backoff::Fixed,
            delay: Duration::from_secs(10),
            max_delay: Duration::from_secs(3600),
            jitter: Jitter::None,
        };
        d
    };

    fn idempotency_key(input: &Subject) -> String {
        format!("flaky:{}", input.key)
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn run(_run: Run, _input: Subject) -> BoxFuture<'static, Result<(), JobError>> {
        Box::pin(async { Err(JobError::retryable("the upstream said no")) })
    }
}

/// What [`Await`] waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paid {
    /// How much.
    pub amount: u64,
}

/// Waits up to an hour for `invoice.paid` under its key.
#[derive(Debug)]
pub struct Await;

impl Job for Await {
    type Input = Subject;
    type Output = Option<u64>;
    const DESCRIPTOR: JobDescriptor = descriptor("conformance.await");

    fn idempotency_key(input: &Subject) -> String {
        format!("await:{}", input.key)
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn run(run: Run, input: Subject) -> BoxFuture<'static, Result<Option<u64>, JobError>> {
        Box::pin(async move {
            let paid: Option<Paid> = run.wait_for_event("invoice.paid", &input.key, "1h").await?;
            Ok(paid.map(|p| p.amount))
        })
    }
}

/// Declares `expires_in = "10m"`; under the key `flaky` its first attempt fails (backoff 1 h).
#[derive(Debug)]
pub struct Perishable;

impl Job for Perishable {
    type Input = Subject;
    type Output = ();
    const DESCRIPTOR: JobDescriptor = {
        let mut d = descriptor("conformance.perishable");
        d.expires_in = Some(Duration::from_secs(600));
        d.retry = RetryPolicy {
            attempts: 2,
            backoff: Backoff::Fixed,
            delay: Duration::from_secs(3600),
            max_delay: Duration::from_secs(3600),
            jitter: Jitter::None,
        };
        d
    };

    fn idempotency_key(input: &Subject) -> String {
        format!("perishable:{}", input.key)
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn run(run: Run, input: Subject) -> BoxFuture<'static, Result<(), JobError>> {
        Box::pin(async move {
            if input.key == "flaky" && run.attempt() == 1 {
                return Err(JobError::retryable("the upstream said no"));
            }
            Ok(())
        })
    }
}

/// A client on a frozen clock at `t0` and a worker for the conformance jobs.
fn rig(driver: Arc<dyn JobDriver>) -> (Jobs, TestClock, Worker) {
    let clock = TestClock::at(t0());
    let jobs = Jobs::with_clock(driver, Arc::new(clock.clone()));
    let mut registry = Registry::new();
    registry
        .register::<Trip>()
        .and_then(|r| r.register::<Flaky>())
        .and_then(|r| r.register::<Await>())
        .and_then(|r| r.register::<Perishable>())
        .expect("distinct names");
    let worker = jobs
        .worker()
        .registry(registry)
        .queues([QUEUE])
        .build()
        .expect("the worker builds");
    (jobs, clock, worker)
}

pub(super) async fn tick(worker: &Worker) -> Vec<JobExecution> {
    worker
        .tick()
        .await
        .unwrap_or_else(|e| panic!("a worker pass failed: {e}"))
}

async fn steps(d: &dyn JobDriver, run_id: RunId) -> Vec<(String, StepStatus)> {
    let mut steps: Vec<_> = d
        .step_list(&StepListParams { run_id })
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.name, s.status))
        .collect();
    steps.sort_by(|a, b| a.0.cmp(&b.0));
    steps
}

/// enqueue -> tick (a step runs, the sleep parks the run) -> advance -> tick (the step replays,
/// the second runs) -> done; the suspension spends no attempt.
pub async fn worker_runs_steps_and_a_sleep_to_done(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let (jobs, clock, worker) = rig(driver.clone());
    let queued = jobs.enqueue::<Trip>(subject("u7")).await.unwrap();
    assert!(!queued.deduped);

    let pass = tick(&worker).await;
    assert_eq!(pass.len(), 1);
    assert_eq!(pass[0].outcome, ExecutionOutcome::Suspended);
    assert_eq!(pass[0].resume_at, Some(at(3600)));
    let row = get(d, queued.id).await;
    assert_eq!(row.state, JobState::Suspended);
    assert_eq!(row.attempt, 0, "a suspension spends no attempt");
    assert_eq!(row.run_at, at(3600));
    assert_eq!(
        steps(d, queued.run_id).await,
        vec![
            ("send".into(), StepStatus::Completed),
            ("sleep:1h".into(), StepStatus::Sleeping),
        ]
    );
    assert!(
        tick(&worker).await.is_empty(),
        "nothing is due while it sleeps"
    );

    clock.advance(Duration::from_secs(3600));
    let pass = tick(&worker).await;
    assert_eq!(pass.len(), 1);
    assert_eq!(pass[0].outcome, ExecutionOutcome::Completed);
    assert_eq!(pass[0].attempt, 1);
    let row = get(d, queued.id).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(row.attempt, 1);
    assert_eq!(
        steps(d, queued.run_id).await,
        vec![
            ("follow-up".into(), StepStatus::Completed),
            ("send".into(), StepStatus::Completed),
            ("sleep:1h".into(), StepStatus::Completed),
        ]
    );
    let follow_up = d
        .step_list(&StepListParams {
            run_id: queued.run_id,
        })
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.name == "follow-up")
        .unwrap();
    assert_eq!(follow_up.output, Some(serde_json::json!("msg-u7-2")));
    assert!(tick(&worker).await.is_empty());
    // Finished: the key is free again.
    assert!(!jobs.enqueue::<Trip>(subject("u7")).await.unwrap().deduped);
}

/// A failing body is retried after its backoff, then dead-lettered on its last attempt, with
/// the error kept on the row.
pub async fn worker_retries_then_dead_letters(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let (jobs, clock, worker) = rig(driver.clone());
    let queued = jobs.enqueue::<Flaky>(subject("f")).await.unwrap();

    let pass = tick(&worker).await;
    assert_eq!(pass.len(), 1);
    assert_eq!(pass[0].outcome, ExecutionOutcome::Retried);
    assert_eq!(pass[0].resume_at, Some(at(10)));
    let row = get(d, queued.id).await;
    assert_eq!(row.state, JobState::Ready);
    assert_eq!(row.attempt, 1);
    assert_eq!(row.run_at, at(10));
    assert!(
        row.last_error
            .as_deref()
            .is_some_and(|e| e.contains("the upstream said no")),
        "{:?}",
        row.last_error
    );
    assert!(tick(&worker).await.is_empty(), "not before the backoff");

    clock.advance(Duration::from_secs(10));
    let pass = tick(&worker).await;
    assert_eq!(pass.len(), 1);
    assert_eq!(pass[0].outcome, ExecutionOutcome::DeadLettered);
    assert_eq!(pass[0].attempt, 2);
    let row = get(d, queued.id).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(row.attempt, 2);
    assert!(
        row.last_error
            .as_deref()
            .is_some_and(|e| e.contains("the upstream said no")),
        "{:?}",
        row.last_error
    );
    let stats = worker.stats();
    assert_eq!((stats.retried, stats.dead_lettered), (1, 1));
    assert_eq!(stats_of(d, QUEUE, jobs.now()).await.dead, 1);
}

/// A wait parks the run; a publish under its key wakes it at once (not at the next poll), and
/// the next pass completes it with the payload.
pub async fn worker_resumes_a_wait_when_its_event_is_published(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let (jobs, clock, worker) = rig(driver.clone());
    let queued = jobs.enqueue::<Await>(subject("inv-9")).await.unwrap();
    let pass = tick(&worker).await;
    assert_eq!(pass[0].outcome, ExecutionOutcome::Suspended);
    assert_eq!(get(d, queued.id).await.state, JobState::Suspended);

    clock.advance(Duration::from_secs(5));
    assert!(tick(&worker).await.is_empty());
    jobs.publish_event("invoice.paid", "inv-8", &Paid { amount: 1 })
        .await
        .unwrap();
    assert!(tick(&worker).await.is_empty(), "another key wakes nothing");
    jobs.publish_event("invoice.paid", "inv-9", &Paid { amount: 9 })
        .await
        .unwrap();
    let pass = tick(&worker).await;
    assert_eq!(pass.len(), 1, "woken by the publish, before the 30 s poll");
    assert_eq!(pass[0].outcome, ExecutionOutcome::Completed);
    let row = get(d, queued.id).await;
    assert_eq!(row.state, JobState::Done);
    assert_eq!(row.attempt, 1);
    let wait = d
        .step_list(&StepListParams {
            run_id: queued.run_id,
        })
        .await
        .unwrap()
        .remove(0);
    assert_eq!(wait.status, StepStatus::Completed);
    assert_eq!(wait.output, Some(serde_json::json!({ "amount": 9 })));
}

/// `expires_in`: a job reached at or after its enqueue plus `expires_in`, before its first
/// attempt started, is settled `failed` with `X_JOB_EXPIRED`, uncounted and never run; one
/// reached in time runs; a retry has started and never expires; an enqueue due past its expiry
/// is refused before anything is written.
pub async fn worker_discards_a_job_not_started_within_its_expiry(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let (jobs, clock, worker) = rig(driver.clone());
    let fresh = jobs.enqueue::<Perishable>(subject("fresh")).await.unwrap();
    let flaky = jobs.enqueue::<Perishable>(subject("flaky")).await.unwrap();
    let pass = tick(&worker).await;
    let outcomes: Vec<_> = pass.iter().map(|e| (e.job_id, e.outcome)).collect();
    assert!(outcomes.contains(&(fresh.id, ExecutionOutcome::Completed)));
    assert!(outcomes.contains(&(flaky.id, ExecutionOutcome::Retried)));

    clock.advance(Duration::from_secs(60));
    let stale = jobs.enqueue::<Perishable>(subject("stale")).await.unwrap();
    // Reached exactly at its expiry (the flaky job's retry is not due for an hour).
    clock.advance(Duration::from_secs(600));
    let pass = tick(&worker).await;
    assert_eq!(pass.len(), 1, "{pass:?}");
    assert_eq!(pass[0].job_id, stale.id);
    assert_eq!(pass[0].outcome, ExecutionOutcome::Expired);
    assert_eq!(pass[0].code, Some(ErrorCode::JobExpired));
    let row = get(d, stale.id).await;
    assert_eq!(row.state, JobState::Failed);
    assert_eq!(row.attempt, 0, "an expired job spends no attempt");
    assert_eq!(row.last_error_code.as_deref(), Some("X_JOB_EXPIRED"));
    assert!(steps(d, stale.run_id).await.is_empty());

    // The retry is due an hour after its first attempt, long past its expiry: it runs.
    clock.advance(Duration::from_secs(3000));
    let pass = tick(&worker).await;
    assert_eq!(pass.len(), 1, "{pass:?}");
    assert_eq!(pass[0].job_id, flaky.id);
    assert_eq!(pass[0].outcome, ExecutionOutcome::Completed);
    assert_eq!(get(d, flaky.id).await.state, JobState::Done);
    assert_eq!(worker.stats().expired, 1);

    let late = jobs
        .enqueue_with::<Perishable>(
            subject("late"),
            crate::EnqueueOptions::new().delay(Duration::from_secs(600)),
        )
        .await
        .unwrap_err();
    assert_eq!(late.code(), Some(ErrorCode::Invariant));
    assert!(
        tick(&worker).await.is_empty(),
        "the refused enqueue wrote nothing"
    );
}
