//! `#[purge]`: one declaration makes the purge job and its cron task (by default
//! `23 * * * *` in UTC). The scheduler fires the task at minute 23, a worker runs the pass over
//! the targets the fn builds (one step each), and the manifest shows both.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jobs::clock::{Clock, TestClock, Timestamp};
use jobs::driver::{JobDriver, MemoryDriver, StepListParams};
use jobs::prelude::*;
use jobs::purge::{Purge, PurgeTarget, DEFAULT_PURGE_CRON, PURGE_CLOCK_STEP};
use jobs::{Registry, Task};

/// An app's own table: counts its passes.
#[derive(Default)]
struct Sessions {
    passes: AtomicU32,
}

struct StaleSessions(Arc<Sessions>);

#[jobs::purge::async_trait]
impl PurgeTarget for StaleSessions {
    fn name(&self) -> &str {
        "sessions"
    }

    async fn purge_expired(&self, _now: Timestamp) -> Result<u64, JobError> {
        self.0.passes.fetch_add(1, Ordering::SeqCst);
        Ok(4)
    }
}

#[purge(name = "purge_declared.purge")]
fn app_purge(run: &Run) -> Result<Purge, JobError> {
    let sessions = run.context::<Sessions>()?;
    Ok(Purge::new()
        .expired_events()
        .target(StaleSessions(sessions)))
}

// Every option: a schedule and zone of its own, the task's name, a queue, a timeout.
#[purge(
    name = "purge_declared.purge.nightly",
    cron = "15 3 * * *",
    tz = "Europe/Paris",
    task = "purge_declared.purge.at-night",
    queue = "maintenance",
    timeout = "10m",
    handle = NightlyPurge
)]
async fn nightly(_run: &Run) -> Result<Purge, JobError> {
    Ok(Purge::new().expired_events())
}

#[test]
fn one_declaration_is_a_job_and_its_task_on_the_default_schedule() {
    let task = <AppPurgeSchedule as Task>::DESCRIPTOR;
    assert_eq!(task.name, "purge_declared.purge.schedule");
    assert_eq!(task.cron, DEFAULT_PURGE_CRON);
    assert_eq!(task.tz, "UTC");
    assert_eq!(AppPurge::descriptor().name, "purge_declared.purge");
    assert_eq!(AppPurge::descriptor().tenant, jobs::TenantMode::None);

    let nightly = <NightlyPurgeSchedule as Task>::DESCRIPTOR;
    assert_eq!(
        (nightly.name, nightly.cron, nightly.tz),
        (
            "purge_declared.purge.at-night",
            "15 3 * * *",
            "Europe/Paris"
        )
    );
    assert_eq!(NightlyPurge::descriptor().queue, "maintenance");

    let text = jobs::manifest().unwrap().to_json();
    assert!(
        text.contains("\"purge_declared.purge\"")
            && text.contains("\"purge_declared.purge.schedule\"")
    );
}

#[tokio::test]
async fn the_scheduler_fires_it_at_minute_23_and_a_worker_runs_each_target_in_its_step() {
    let clock = TestClock::at("2030-01-01T00:00:00Z".parse().unwrap());
    let driver = Arc::new(MemoryDriver::new());
    let jobs = Jobs::with_clock(driver.clone(), Arc::new(clock.clone()));
    let sessions = Arc::new(Sessions::default());
    let mut registry = Registry::new();
    registry.register::<AppPurge>().unwrap();
    registry.register_task::<AppPurgeSchedule>().unwrap();
    let scheduler = jobs.scheduler().registry(registry.clone()).build().unwrap();
    let worker = jobs
        .worker()
        .registry(registry)
        .context(sessions.clone())
        .build()
        .unwrap();

    let mut fired = Vec::new();
    scheduler.tick().await.unwrap(); // arming is not a fire
    while clock.now() < "2030-01-01T01:30:00Z".parse::<Timestamp>().unwrap() {
        clock.advance(Duration::from_secs(60));
        fired.extend(scheduler.tick().await.unwrap().fired);
    }
    let at: Vec<String> = fired.iter().map(|(_, at)| at.to_rfc3339()).collect();
    assert_eq!(
        at,
        ["2030-01-01T00:23:00+00:00", "2030-01-01T01:23:00+00:00"]
    );

    for _ in 0..10 {
        if worker.tick().await.unwrap().is_empty() {
            break;
        }
    }
    let passes = driver.all_jobs();
    assert_eq!(passes.len(), 2);
    for pass in &passes {
        assert_eq!(pass.name, "purge_declared.purge");
        assert_eq!(pass.state, JobState::Done, "{:?}", pass.last_error);
        let steps = driver
            .step_list(&StepListParams {
                run_id: pass.run_id,
            })
            .await
            .unwrap();
        let mut names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["events", PURGE_CLOCK_STEP, "sessions"]);
    }
    assert_eq!(sessions.passes.load(Ordering::SeqCst), 2);
}
