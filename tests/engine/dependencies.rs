//! Dependencies through the client and a worker: a declared policy
//! (`#[job(on_dependency_failure = run_anyway)]`) reaches the dependent's enqueue, an enqueue's
//! own policy overrides it, and a worker runs a released dependent in the same drain as its
//! dependency.

use jobs::prelude::*;
use jobs::testing::TestKit;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Stage {
    n: u32,
}

#[job(key = "deps.broken:{n}", tenant = none, retry(attempts = 1))]
async fn deps_broken(_run: Run, _input: Stage) -> Result<(), JobError> {
    Err(JobError::terminal("the upstream export is gone"))
}

#[job(key = "deps.summary:{n}", tenant = none, on_dependency_failure = run_anyway)]
async fn deps_summary(_run: Run, _input: Stage) -> Result<(), JobError> {
    Ok(())
}

#[tokio::test]
async fn a_declared_policy_runs_a_dependent_of_a_dead_job_and_an_enqueue_can_override_it() {
    let kit = TestKit::new();
    let jobs = kit.jobs();
    let broken = DepsBroken::enqueue(jobs, Stage { n: 1 }).await.unwrap();
    let after = || EnqueueOptions::new().depends_on([broken.id]);
    let anyway = DepsSummary::enqueue_with(jobs, Stage { n: 1 }, after())
        .await
        .unwrap();
    let cancelled = DepsSummary::enqueue_with(
        jobs,
        Stage { n: 2 },
        after().on_dependency_failure(DependencyFailure::Cancel),
    )
    .await
    .unwrap();
    let links = jobs.links(anyway.id).await.unwrap();
    assert_eq!(
        links.on_dependency_failure,
        Some(DependencyFailure::RunAnyway)
    );

    kit.run_until_idle().await;
    assert_eq!(kit.job(broken.id).await.state, JobState::Dead);
    assert_eq!(kit.job(anyway.id).await.state, JobState::Done);
    let row = kit.job(cancelled.id).await;
    assert_eq!(row.state, JobState::Cancelled);
    assert_eq!(
        row.last_error_code.as_deref(),
        Some("X_JOB_DEPENDENCY_FAILED")
    );
}

#[tokio::test]
async fn dependencies_are_refused_where_a_dependent_cannot_be_kept() {
    let kit = TestKit::new();
    let jobs = kit.jobs();
    let first = DepsSummary::enqueue(jobs, Stage { n: 3 }).await.unwrap();
    let delayed = EnqueueOptions::new()
        .depends_on([first.id])
        .delay(std::time::Duration::from_secs(60));
    let error = DepsSummary::enqueue_with(jobs, Stage { n: 4 }, delayed)
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::Invariant));
    assert!(error.fix().unwrap().contains("run.sleep"), "{error}");
}
