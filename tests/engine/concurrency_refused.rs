//! A job declaring `concurrency` needs a lease store: on a driver without one, a worker that
//! would run it refuses to start (`X_JOB_CONCURRENCY_UNENFORCEABLE`) rather than run it
//! uncapped. On a driver with one, the caps hold. Keyed concurrency keys are also checked at
//! enqueue.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, Ordering};

use jobs::prelude::*;
use jobs::testing::TestKit;
use jobs::{ExecutionOutcome, Registry};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Push {
    user_id: u64,
}

#[job(name = "concurrency_refused.capped", key = "push:{user_id}", tenant = none, concurrency = 2)]
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

/// How many bodies of one job are running, the most ever at once, and how many finished.
struct Gauge {
    inside: AtomicU32,
    most: AtomicU32,
    done: AtomicU32,
}

impl Gauge {
    const fn new() -> Self {
        Gauge {
            inside: AtomicU32::new(0),
            most: AtomicU32::new(0),
            done: AtomicU32::new(0),
        }
    }

    /// A body: in, yield so that the other runs claimed in the same pass start meanwhile, out.
    async fn visit(&self) {
        let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        self.inside.fetch_sub(1, Ordering::SeqCst);
        self.done.fetch_add(1, Ordering::SeqCst);
    }
}

static ONE_AT_A_TIME: Gauge = Gauge::new();
static ALL_AT_ONCE: Gauge = Gauge::new();

#[job(key = "one:{user_id}", tenant = none, concurrency = 1)]
async fn one_at_a_time(_run: Run, _input: Push) -> Result<(), JobError> {
    ONE_AT_A_TIME.visit().await;
    Ok(())
}

/// The same body without a cap: shows that the runs of one pass do overlap.
#[job(key = "all:{user_id}", tenant = none)]
async fn all_at_once(_run: Run, _input: Push) -> Result<(), JobError> {
    ALL_AT_ONCE.visit().await;
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

/// The job names a refusal lists (`jobs a, b declare ...`).
fn refused_names(message: &str) -> BTreeSet<String> {
    let listed = message
        .strip_prefix("jobs ")
        .and_then(|rest| rest.split_once(" declare `concurrency`"))
        .unwrap_or_else(|| panic!("not a concurrency refusal: {message}"))
        .0;
    listed.split(", ").map(str::to_string).collect()
}

#[test]
fn the_refusal_names_every_capped_job() {
    // The jobs of this module: the refusal names both capped ones, and not the uncapped one.
    let mut registry = Registry::new();
    registry
        .register::<Capped>()
        .unwrap()
        .register::<KeyedCapped>()
        .unwrap()
        .register::<Uncapped>()
        .unwrap();
    let error = no_lease_store()
        .worker()
        .registry(registry)
        .build()
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobConcurrencyUnenforceable));
    assert_eq!(
        refused_names(error.message()),
        BTreeSet::from([
            "concurrency_refused.capped".to_string(),
            "keyed_capped".to_string()
        ]),
        "{}",
        error.message()
    );

    // Every job linked into this binary (other modules declare capped jobs too): the refusal
    // names exactly the capped ones.
    let error = no_lease_store().worker().build().unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::JobConcurrencyUnenforceable));
    let capped: BTreeSet<String> = Registry::global()
        .unwrap()
        .entries()
        .filter(|e| e.descriptor().concurrency.is_some() || e.descriptor().rate.is_some())
        .map(|e| e.descriptor().name.to_string())
        .collect();
    assert!(capped.contains("concurrency_refused.capped") && capped.contains("keyed_capped"));
    assert!(!capped.contains("uncapped"));
    assert_eq!(
        refused_names(error.message()),
        capped,
        "{}",
        error.message()
    );
}

#[tokio::test]
async fn a_driver_with_a_lease_store_enforces_the_caps() {
    // The memory driver has a lease store: a worker over the capped jobs starts.
    let mut registry = Registry::new();
    registry
        .register::<Capped>()
        .unwrap()
        .register::<KeyedCapped>()
        .unwrap();
    let worker = Jobs::memory().worker().registry(registry).build().unwrap();
    assert_eq!(worker.queues(), ["default"]);

    // And it holds them: five runs of a job capped at one, run to completion on the frozen
    // clock, never have two bodies running at once, and all complete.
    let mut registry = Registry::new();
    registry
        .register::<OneAtATime>()
        .unwrap()
        .register::<AllAtOnce>()
        .unwrap();
    let kit = TestKit::with_registry(registry);
    let mut ids = Vec::new();
    for user_id in 0..5 {
        ids.push(kit.enqueue::<OneAtATime>(Push { user_id }).await.id);
    }
    let executions = kit.run_to_completion().await;
    for id in &ids {
        assert_eq!(kit.job(*id).await.state, JobState::Done);
    }
    assert_eq!(ONE_AT_A_TIME.done.load(Ordering::SeqCst), 5);
    assert_eq!(
        ONE_AT_A_TIME.most.load(Ordering::SeqCst),
        1,
        "two bodies of a job capped at one ran at once"
    );
    assert!(
        executions
            .iter()
            .any(|e| e.outcome == ExecutionOutcome::Shed),
        "the runs over the cap were handed back: {executions:?}"
    );

    // The same body uncapped, on the same worker: the runs of one pass do overlap, so the
    // gauge above would have seen two bodies at once.
    for user_id in 0..5 {
        kit.enqueue::<AllAtOnce>(Push { user_id }).await;
    }
    kit.run_to_completion().await;
    assert_eq!(ALL_AT_ONCE.done.load(Ordering::SeqCst), 5);
    assert!(
        ALL_AT_ONCE.most.load(Ordering::SeqCst) > 1,
        "uncapped runs of one pass overlap"
    );
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
