//! Registration rules: one name, one job. This binary declares two jobs under one name on
//! purpose, so its global registry (and so `jobs::manifest()` and a default worker) refuses:
//! it is a test binary of its own, since that refusal would fail every test in a shared binary
//! that builds a worker, a scheduler or the manifest from the jobs linked in.

use jobs::prelude::*;
use jobs::testing::TestKit;
use jobs::{ExecutionOutcome, Registry};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct First {
    id: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Second {
    label: String,
}

#[job(name = "x", key = "first:{id}", tenant = none)]
async fn first_x(_run: Run, input: First) -> Result<u64, JobError> {
    Ok(input.id)
}

#[job(name = "x", key = "second:{label}", tenant = none)]
async fn second_x(_run: Run, _input: Second) -> Result<(), JobError> {
    Ok(())
}

#[test]
fn two_jobs_under_one_name_are_a_duplicate() {
    let mut registry = Registry::new();
    registry.register::<FirstX>().unwrap();
    let error = registry.register::<SecondX>().unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobDuplicate));
    assert!(error.message().contains("`x`"), "{}", error.message());
    assert_eq!(registry.len(), 1);
    assert_eq!(
        registry.get("x").unwrap().descriptor().input_type,
        "First",
        "the first registration stands"
    );
}

#[test]
fn registering_the_same_job_twice_is_one_registration() {
    let mut registry = Registry::new();
    registry
        .register::<FirstX>()
        .unwrap()
        .register::<FirstX>()
        .unwrap();
    assert_eq!(registry.len(), 1);
}

#[test]
fn the_global_registry_refuses_the_duplicate_everywhere() {
    let error = jobs::manifest().unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobDuplicate));
    let error = Registry::global().unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobDuplicate));
    let error = Jobs::memory().worker().build().unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobDuplicate));
}

#[tokio::test]
async fn a_registry_built_by_hand_runs_its_jobs() {
    let mut registry = Registry::new();
    registry.register::<FirstX>().unwrap();
    let kit = TestKit::with_registry(registry);
    let queued = FirstX::enqueue(kit.jobs(), First { id: 4 }).await.unwrap();
    let executions = kit.run_to_completion().await;
    assert_eq!(executions.len(), 1);
    assert_eq!(executions[0].outcome, ExecutionOutcome::Completed);
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
}
