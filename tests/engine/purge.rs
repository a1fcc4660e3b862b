//! The purge job (`jobs::purge`) on the memory driver and a test clock: each target in its own
//! durable step with one clock reading per pass, a pass stopped after its first target resuming
//! at the second, the built-in targets, and bad target names refused before any delete.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobs::clock::Timestamp;
use jobs::driver::{EventPurgeParams, JobDriver, JobGetParams, StepStatus};
use jobs::prelude::*;
use jobs::purge::{Purge, PurgePass, PurgeReport, PurgeTarget, PURGE_CLOCK_STEP};
use jobs::testing::TestKit;
use jobs::{Registry, Retention};

/// What the app's targets saw: each call's target name and `now`, and whether `second` still
/// has to fail once.
#[derive(Default)]
struct Probe {
    calls: Mutex<Vec<(String, Timestamp)>>,
    fail_second_once: AtomicBool,
    /// The name `test.purge.named` gives its one target.
    name: Mutex<String>,
}

impl Probe {
    fn calls(&self) -> Vec<(String, Timestamp)> {
        self.calls.lock().unwrap().clone()
    }
}

/// An app's target: records its call and answers a fixed count (or fails once, as a pass
/// killed inside it would stop).
struct Counting {
    name: String,
    rows: u64,
    probe: Arc<Probe>,
}

#[jobs::purge::async_trait]
impl PurgeTarget for Counting {
    fn name(&self) -> &str {
        &self.name
    }

    async fn purge_expired(&self, now: Timestamp) -> Result<u64, JobError> {
        self.probe
            .calls
            .lock()
            .unwrap()
            .push((self.name.clone(), now));
        if self.name == "second" && self.probe.fail_second_once.swap(false, Ordering::SeqCst) {
            return Err(JobError::retryable("the pass stopped inside `second`"));
        }
        Ok(self.rows)
    }
}

fn counting(run: &Run, name: &'static str, rows: u64) -> Result<Counting, JobError> {
    Ok(Counting {
        name: name.to_string(),
        rows,
        probe: run.context::<Probe>()?,
    })
}

/// The built-ins, then two app targets.
#[job(name = "test.purge", key = "purge", tenant = none, retry(attempts = 3, delay = "1m", jitter = none))]
async fn purge_all(run: Run, _pass: PurgePass) -> Result<PurgeReport, JobError> {
    Purge::new()
        .expired_events()
        .finished_jobs(Retention::default().done(Duration::from_secs(3600)))
        .target(counting(&run, "first", 3)?)
        .target(counting(&run, "second", 5)?)
        .run(&run)
        .await
}

/// Two targets under one name, after one that would delete.
#[job(name = "test.purge.duplicate", key = "purge", tenant = none)]
async fn purge_duplicate(run: Run, _pass: PurgePass) -> Result<PurgeReport, JobError> {
    Purge::new()
        .target(counting(&run, "first", 1)?)
        .expired_events()
        .target(counting(&run, "first", 2)?)
        .run(&run)
        .await
}

/// A target under the name of the pass's clock step.
#[job(name = "test.purge.reserved", key = "purge", tenant = none)]
async fn purge_reserved(run: Run, _pass: PurgePass) -> Result<PurgeReport, JobError> {
    Purge::new()
        .expired_events()
        .target(Counting {
            name: PURGE_CLOCK_STEP.to_string(),
            rows: 1,
            probe: run.context::<Probe>()?,
        })
        .run(&run)
        .await
}

/// One target under the name the probe gives.
#[job(name = "test.purge.named", key = "purge", tenant = none)]
async fn purge_named(run: Run, _pass: PurgePass) -> Result<PurgeReport, JobError> {
    let probe = run.context::<Probe>()?;
    let name = probe.name.lock().unwrap().clone();
    Purge::new()
        .expired_events()
        .target(Counting {
            name,
            rows: 1,
            probe,
        })
        .run(&run)
        .await
}

/// A plain job whose finished row the `jobs` target deletes.
#[job(key = "done:{id}", tenant = none)]
async fn short_lived(_run: Run, input: Item) -> Result<(), JobError> {
    let _ = input.id;
    Ok(())
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Item {
    id: u64,
}

fn kit(probe: Arc<Probe>) -> TestKit {
    let mut registry = Registry::new();
    registry
        .register::<PurgeAll>()
        .unwrap()
        .register::<PurgeDuplicate>()
        .unwrap()
        .register::<PurgeReserved>()
        .unwrap()
        .register::<PurgeNamed>()
        .unwrap()
        .register::<ShortLived>()
        .unwrap();
    TestKit::with_worker(|w| w.registry(registry).context(probe))
}

/// Events expired at the kit's clock that are still stored (a probe purge that deletes them).
async fn expired_events_left(kit: &TestKit) -> u64 {
    kit.driver()
        .event_purge(&EventPurgeParams {
            now: kit.jobs().now(),
            limit: 1_000,
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn each_target_runs_in_its_own_step_with_one_clock_reading() {
    let probe = Arc::new(Probe::default());
    let kit = kit(probe.clone());
    // Two events that will expire (the default ttl is 7 days), a job that will be past the
    // done window.
    for key in ["a", "b"] {
        kit.jobs()
            .publish_event("order.shipped", key, &serde_json::json!({}))
            .await
            .unwrap();
    }
    let old = kit.run::<ShortLived>(Item { id: 1 }).await;
    assert_eq!(old.state, JobState::Done);
    kit.advance(Duration::from_secs(8 * 86_400));

    let pass = kit.run::<PurgeAll>(PurgePass::default()).await;
    assert_eq!(pass.state, JobState::Done, "{:?}", pass.last_error);

    let steps = kit.steps(pass.run_id).await;
    let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
    let mut expected = vec![PURGE_CLOCK_STEP, "events", "jobs", "first", "second"];
    expected.sort_unstable();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted, expected,
        "one step for the clock and one per target"
    );
    let output = |name: &str| {
        let step = steps.iter().find(|s| s.name == name).unwrap();
        assert_eq!(step.status, StepStatus::Completed);
        step.output.clone().unwrap()
    };
    assert_eq!(output("events"), serde_json::json!(2));
    assert_eq!(output("jobs"), serde_json::json!(1));
    assert_eq!(output("first"), serde_json::json!(3));
    assert_eq!(output("second"), serde_json::json!(5));
    for name in expected {
        assert_eq!(kit.step_runs(pass.run_id, name), 1, "`{name}` ran once");
    }

    // Every target got the pass's one reading, the one its clock step stored.
    let now: Timestamp = serde_json::from_value(output(PURGE_CLOCK_STEP)).unwrap();
    assert_eq!(now, kit.jobs().now());
    assert_eq!(
        probe.calls(),
        vec![("first".to_string(), now), ("second".to_string(), now)]
    );

    assert_eq!(expired_events_left(&kit).await, 0);
    assert_eq!(
        kit.driver()
            .job_get(&JobGetParams { id: old.id })
            .await
            .unwrap(),
        None,
        "the finished job past its window went"
    );
}

#[tokio::test]
async fn a_pass_stopped_after_its_first_target_resumes_at_the_second() {
    let probe = Arc::new(Probe::default());
    probe.fail_second_once.store(true, Ordering::SeqCst);
    let kit = kit(probe.clone());
    let queued = kit.enqueue::<PurgeAll>(PurgePass::default()).await;
    let started = kit.jobs().now();

    // Attempt 1: the clock, `events`, `jobs` and `first` complete; `second` stops the pass.
    kit.run_until_idle().await;
    let stopped = kit.job(queued.id).await;
    assert_eq!(stopped.attempt, 1);
    assert!(stopped.state.is_live(), "{:?}", stopped.state);

    // Attempt 2, a minute later: only `second` runs again, with the first attempt's reading.
    let record = kit.run_to_completion().await;
    assert!(!record.is_empty());
    let done = kit.job(queued.id).await;
    assert_eq!(done.state, JobState::Done, "{:?}", done.last_error);
    assert_eq!(done.attempt, 2);
    assert!(kit.jobs().now() > started, "the retry ran later");
    for name in [PURGE_CLOCK_STEP, "events", "jobs", "first"] {
        assert_eq!(
            kit.step_runs(queued.run_id, name),
            1,
            "`{name}` completed in the first attempt and replayed"
        );
    }
    assert_eq!(kit.step_runs(queued.run_id, "second"), 2);
    assert_eq!(
        probe.calls(),
        vec![
            ("first".to_string(), started),
            ("second".to_string(), started),
            ("second".to_string(), started),
        ],
        "the resumed target deletes as of the pass's one reading"
    );
}

#[tokio::test]
async fn two_targets_under_one_name_are_refused_before_any_delete() {
    let probe = Arc::new(Probe::default());
    let kit = kit(probe.clone());
    kit.jobs()
        .publish_event("order.shipped", "a", &serde_json::json!({}))
        .await
        .unwrap();
    kit.advance(Duration::from_secs(8 * 86_400));

    let refused = kit.run::<PurgeDuplicate>(PurgePass::default()).await;
    assert_eq!(refused.state, JobState::Dead, "failed for good");
    assert_eq!(refused.attempt, 1, "an invariant is not retried");
    assert_eq!(refused.last_error_code.as_deref(), Some("X_INVARIANT"));
    let message = refused.last_error.unwrap_or_default();
    assert!(
        message.contains("two purge targets are named `first`"),
        "{message}"
    );
    assert!(probe.calls().is_empty(), "no target ran");
    assert!(
        kit.steps(refused.run_id).await.is_empty(),
        "not even the clock was read"
    );
    assert_eq!(
        expired_events_left(&kit).await,
        1,
        "the expired event is still there"
    );
}

#[tokio::test]
async fn a_target_under_the_clock_steps_name_is_refused_before_any_delete() {
    let probe = Arc::new(Probe::default());
    let kit = kit(probe.clone());
    kit.jobs()
        .publish_event("order.shipped", "a", &serde_json::json!({}))
        .await
        .unwrap();
    kit.advance(Duration::from_secs(8 * 86_400));

    let refused = kit.run::<PurgeReserved>(PurgePass::default()).await;
    assert_eq!(refused.state, JobState::Dead, "failed for good");
    assert_eq!(refused.last_error_code.as_deref(), Some("X_INVARIANT"));
    assert!(probe.calls().is_empty());
    assert!(kit.steps(refused.run_id).await.is_empty());
    assert_eq!(expired_events_left(&kit).await, 1);
}

#[tokio::test]
async fn an_empty_or_overlong_target_name_is_refused_before_any_delete() {
    for (name, says) in [
        (String::new(), "an empty name"),
        (
            "t".repeat(jobs::limits::MAX_STEP_NAME_BYTES + 1),
            "step-name limit",
        ),
    ] {
        let probe = Arc::new(Probe::default());
        *probe.name.lock().unwrap() = name;
        let kit = kit(probe.clone());
        kit.jobs()
            .publish_event("order.shipped", "a", &serde_json::json!({}))
            .await
            .unwrap();
        kit.advance(Duration::from_secs(8 * 86_400));

        let refused = kit.run::<PurgeNamed>(PurgePass::default()).await;
        assert_eq!(refused.state, JobState::Dead, "failed for good");
        assert_eq!(refused.last_error_code.as_deref(), Some("X_INVARIANT"));
        let message = refused.last_error.unwrap_or_default();
        assert!(message.contains(says), "{message}");
        assert!(probe.calls().is_empty());
        assert!(kit.steps(refused.run_id).await.is_empty());
        assert_eq!(expired_events_left(&kit).await, 1);
    }
}
