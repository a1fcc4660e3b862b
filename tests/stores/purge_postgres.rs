//! The purge job on real Postgres: a pass through a worker deletes the expired events (on
//! `x_job_events_expiry_idx`, migration 0016) and keeps the live ones, each target in its step.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use jobs::clock::TestClock;
use jobs::driver::{JobDriver, StepListParams, StepStatus};
use jobs::prelude::*;
use jobs::purge::{Purge, PurgePass, PurgeReport, PURGE_CLOCK_STEP};
use jobs::sqlx::{self, AssertSqlSafe};
use jobs::{Registry, Retention};
use support::pg;

#[job(name = "pg.purge", key = "purge", tenant = none)]
async fn purge_expired(run: Run, _pass: PurgePass) -> Result<PurgeReport, JobError> {
    Purge::new()
        .expired_events()
        .finished_jobs(Retention::default())
        .run(&run)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_pass_keeps_only_the_live_events() {
    let (pool, schema) = pg::schema("a_purge_pass_keeps_only_the_live_events").await;
    let driver: Arc<dyn JobDriver> =
        Arc::new(jobs::driver::PostgresDriver::new(pool.clone(), &schema).unwrap());
    let clock = TestClock::new();
    let jobs = Jobs::with_clock(driver.clone(), Arc::new(clock.clone()));

    // Three events that will be 8 days old (past the 7-day ttl), one 5 days old.
    for key in ["a", "b", "c"] {
        jobs.publish_event("order.shipped", key, &serde_json::json!({}))
            .await
            .unwrap();
    }
    clock.advance(Duration::from_secs(3 * 86_400));
    jobs.publish_event("order.shipped", "live", &serde_json::json!({}))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(5 * 86_400));

    let index: Option<String> = sqlx::query_scalar(
        "select indexname::text from pg_indexes where schemaname = $1 and indexname = 'x_job_events_expiry_idx'",
    )
    .bind(&schema)
    .fetch_optional(&pool)
    .await
    .unwrap();
    assert!(index.is_some(), "migration 0016 created the expiry index");

    let mut registry = Registry::new();
    registry.register::<PurgeExpired>().unwrap();
    let worker = jobs.worker().registry(registry).build().unwrap();
    let queued = PurgeExpired::enqueue(&jobs, PurgePass::default())
        .await
        .unwrap();
    for _ in 0..10 {
        if worker.tick().await.unwrap().is_empty() {
            break;
        }
    }
    let job = jobs.job(queued.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Done, "{:?}", job.last_error);

    let steps = driver
        .step_list(&StepListParams { run_id: job.run_id })
        .await
        .unwrap();
    let mut names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["events", "jobs", PURGE_CLOCK_STEP]);
    assert!(steps.iter().all(|s| s.status == StepStatus::Completed));
    let events = steps.iter().find(|s| s.name == "events").unwrap();
    assert_eq!(events.output, Some(serde_json::json!(3)));

    let keys: Vec<String> = sqlx::query_scalar(AssertSqlSafe(format!(
        "select key from {schema}.x_job_events order by key"
    )))
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(keys, ["live"], "only the live event is left");
}
