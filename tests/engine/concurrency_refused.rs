//! A job declaring `concurrency` needs a lease store: on a driver without one, a worker that
//! would run it refuses to start (`X_JOB_CONCURRENCY_UNENFORCEABLE`) rather than run it
//! uncapped. Keyed concurrency keys are also checked at enqueue.

use jobs::prelude::*;
use jobs::Registry;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Push {
    user_id: u64,
}

#[job(key = "push:{user_id}", tenant = none, concurrency = 2)]
async fn capped(_run: Run, _input: Push) -> Result<(), JobError> {
    Ok(())
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Account {
    account: String,
}

#[job(key = "sync:{account}", tenant = none, concurrency(key = |input| input.account.clone(), limit = 1))]
async fn keyed_capped(_run: Run, _input: Account) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "free:{user_id}", tenant = none)]
async fn uncapped(_run: Run, _input: Push) -> Result<(), JobError> {
    Ok(())
}

/// A driver that cannot hold fleet-wide slots.
fn no_lease_store() -> Jobs {
    Jobs::new(jobs::driver::MemoryDriver::without_lease_store())
}

#[test]
fn a_worker_over_a_capped_job_refuses_to_start() {
    let jobs = no_lease_store();
    let mut registry = Registry::new();
    registry.register::<Capped>().unwrap();
    let error = jobs.worker().registry(registry).build().unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobConcurrencyUnenforceable));
    assert!(error.message().contains("capped"), "{}", error.message());
}

#[test]
fn the_refusal_names_every_capped_job() {
    let error = no_lease_store().worker().build().unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobConcurrencyUnenforceable));
    assert!(error.message().contains("capped"), "{}", error.message());
    assert!(
        error.message().contains("keyed_capped"),
        "{}",
        error.message()
    );
    assert!(!error.message().contains("uncapped"), "{}", error.message());
}

#[test]
fn a_driver_with_a_lease_store_enforces_the_caps() {
    let worker = Jobs::memory().worker().build().unwrap();
    assert_eq!(worker.queues(), ["default"]);
}

#[test]
fn a_worker_without_capped_jobs_starts() {
    let mut registry = Registry::new();
    registry.register::<Uncapped>().unwrap();
    let worker = Jobs::memory().worker().registry(registry).build().unwrap();
    assert_eq!(worker.queues(), ["default"]);
}

#[tokio::test]
async fn a_keyed_concurrency_key_is_checked_at_enqueue() {
    let jobs = Jobs::memory();
    let empty = KeyedCapped::enqueue(
        &jobs,
        Account {
            account: String::new(),
        },
    )
    .await
    .unwrap_err();
    assert_eq!(empty.code(), Some(ErrorCode::JobDeclarationInvalid));
    let long = KeyedCapped::enqueue(
        &jobs,
        Account {
            account: "a".repeat(201),
        },
    )
    .await
    .unwrap_err();
    assert_eq!(long.code(), Some(ErrorCode::JobDeclarationInvalid));
    let fine = KeyedCapped::enqueue(
        &jobs,
        Account {
            account: "a".repeat(200),
        },
    )
    .await
    .unwrap();
    assert!(!fine.deduped);
    // Enqueue itself does not need a lease store.
    assert!(
        !Capped::enqueue(&jobs, Push { user_id: 1 })
            .await
            .unwrap()
            .deduped
    );
}
