//! Bad input on Postgres: each case puts one bad thing in front of a worker beside a good job,
//! and checks the bad one ends with a clear code, the good one runs, nothing is lost and the
//! worker keeps claiming. (The memory-driver versions of the first two live in
//! tests/engine/worker.rs.)
//!
//! Every worker here is driven with `tick()` on a `TestClock`: time moves only when a case says.

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jobs::clock::TestClock;
use jobs::driver::{JobId, PostgresDriver, RunId, StepListParams};
use jobs::duration::parse_duration;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe, PgPool};
use jobs::{ExecutionOutcome, JobExecution, StepObserver, Worker};
use support::pg;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Item {
    id: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Card {
    id: u64,
    number: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Blob {
    id: u64,
    data: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Nap {
    id: u64,
    /// A duration read from configuration, not a literal.
    every: String,
}

#[job(key = "ok:{id}", tenant = none)]
async fn good(run: Run, input: Item) -> Result<u64, JobError> {
    run.step("one", async { Ok::<_, JobError>(input.id) }).await
}

#[job(key = "card:{id}", tenant = none)]
async fn charge_card(_run: Run, input: Card) -> Result<u64, JobError> {
    Ok(input.number % 10)
}

#[job(key = "blob:{id}", tenant = none)]
async fn big_blob(run: Run, input: Blob) -> Result<usize, JobError> {
    run.step("measure", async { Ok::<_, JobError>(input.data.len()) })
        .await
}

/// A map with tuple keys serializes to nothing JSON can hold.
#[job(key = "unser:{id}", tenant = none)]
async fn unserializable(run: Run, _input: Item) -> Result<(), JobError> {
    let _: HashMap<(u32, u32), u32> = run
        .step("pairs", async {
            Ok::<_, JobError>(HashMap::from([((1, 2), 3)]))
        })
        .await?;
    Ok(())
}

/// Completes `first`, fails its second step once, then completes.
#[job(
    name = "chaos_bad_input.two_steps",
    key = "two:{id}",
    tenant = none,
    retry(attempts = 3, backoff = fixed, delay = "1s", jitter = none)
)]
async fn two_steps(run: Run, _input: Item) -> Result<(), JobError> {
    run.step("first", async { Ok::<_, JobError>(1) }).await?;
    let attempt = run.attempt();
    run.step("second", async move {
        if attempt == 1 {
            Err(JobError::retryable("not yet"))
        } else {
            Ok(2)
        }
    })
    .await?;
    Ok(())
}

/// Returns a string with a NUL in it: JSON holds it, Postgres' jsonb does not.
#[job(key = "nul:{id}", tenant = none, retry(attempts = 3, backoff = fixed, delay = "1s", jitter = none))]
async fn nul_output(run: Run, _input: Item) -> Result<(), JobError> {
    let _: String = run
        .step("nul", async { Ok::<_, JobError>("a\u{0}b".to_string()) })
        .await?;
    Ok(())
}

#[job(key = "nap:{id}", tenant = none)]
async fn configured_nap(run: Run, input: Nap) -> Result<(), JobError> {
    run.sleep(&input.every).await
}

/// Counts the step closures that ran, per step name.
#[derive(Default)]
struct Counter(std::sync::Mutex<HashMap<String, u32>>);

impl StepObserver for Counter {
    fn step_executed(&self, _job: JobId, _run: RunId, name: &str) {
        *self.0.lock().unwrap().entry(name.to_string()).or_insert(0) += 1;
    }
}

impl Counter {
    fn runs(&self, name: &str) -> u32 {
        self.0.lock().unwrap().get(name).copied().unwrap_or(0)
    }
}

struct Case {
    pool: PgPool,
    schema: String,
    jobs: Jobs,
    clock: TestClock,
    worker: Worker,
    steps: Arc<Counter>,
}

async fn case(name: &str) -> Case {
    let (pool, schema) = pg::schema(name).await;
    let clock = TestClock::new();
    let driver = PostgresDriver::new(pool.clone(), &schema).expect("schema");
    let jobs = Jobs::with_clock(Arc::new(driver), Arc::new(clock.clone()));
    let steps = Arc::new(Counter::default());
    let worker = jobs
        .worker()
        .observer(steps.clone())
        .build()
        .expect("worker");
    Case {
        pool,
        schema,
        jobs,
        clock,
        worker,
        steps,
    }
}

impl Case {
    async fn sql(&self, statement: &str, id: uuid::Uuid) {
        let sql = statement.replace("{s}", &self.schema);
        sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .execute(&self.pool)
            .await
            .expect("tamper");
    }

    async fn tick(&self) -> Vec<JobExecution> {
        self.worker.tick().await.expect("the worker's pass")
    }

    async fn row(&self, id: JobId) -> jobs::JobRecord {
        self.jobs.job(id).await.expect("read").expect("exists")
    }

    /// The worker still claims and runs a fresh job.
    async fn still_works(&self, id: u64) {
        let fresh = Good::enqueue(&self.jobs, Item { id })
            .await
            .expect("enqueue");
        let ran = self.tick().await;
        assert!(
            ran.iter()
                .any(|e| e.job_id == fresh.id && e.outcome == ExecutionOutcome::Completed),
            "the worker carries on: {ran:?}"
        );
    }

    async fn rows(&self) -> i64 {
        sqlx::query_scalar(AssertSqlSafe(format!(
            "select count(*) from {}.x_jobs",
            self.schema
        )))
        .fetch_one(&self.pool)
        .await
        .expect("count")
    }
}

fn outcome(executions: &[JobExecution], id: JobId) -> &JobExecution {
    executions
        .iter()
        .find(|e| e.job_id == id)
        .unwrap_or_else(|| panic!("job {id} ran: {executions:?}"))
}

#[tokio::test]
async fn a_stored_payload_that_no_longer_parses_is_dead_lettered_on_postgres() {
    let c = case("bad_payload").await;
    let bad = ChargeCard::enqueue(
        &c.jobs,
        Card {
            id: 1,
            number: 4111,
        },
    )
    .await
    .unwrap();
    let fine = Good::enqueue(&c.jobs, Item { id: 1 }).await.unwrap();
    // A later deploy stored the number as text (and a secret in it).
    c.sql(
        r#"update {s}.x_jobs set input = '{"id": 1, "number": "4111-1111-1111-1111"}' where id = $1"#,
        bad.id,
    )
    .await;
    let ran = c.tick().await;
    let failed = outcome(&ran, bad.id);
    assert_eq!(failed.outcome, ExecutionOutcome::DeadLettered);
    assert_eq!(failed.code, Some(ErrorCode::JobInputInvalid));
    assert_eq!(outcome(&ran, fine.id).outcome, ExecutionOutcome::Completed);
    let row = c.row(bad.id).await;
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(row.last_error_code.as_deref(), Some("X_JOB_INPUT_INVALID"));
    let last_error = row.last_error.unwrap_or_default();
    assert!(!last_error.contains("4111"), "payload leaked: {last_error}");
    c.still_works(2).await;
}

#[tokio::test]
async fn a_20_mb_payload_runs_and_the_jobs_beside_it_too() {
    let c = case("big_payload").await;
    let data = "x".repeat(20 * 1024 * 1024);
    let big = BigBlob::enqueue(&c.jobs, Blob { id: 1, data })
        .await
        .expect("a 20 MB input is stored");
    let fine = Good::enqueue(&c.jobs, Item { id: 1 }).await.unwrap();
    let ran = c.tick().await;
    assert_eq!(outcome(&ran, big.id).outcome, ExecutionOutcome::Completed);
    assert_eq!(outcome(&ran, fine.id).outcome, ExecutionOutcome::Completed);
    let steps = c
        .jobs
        .driver()
        .step_list(&StepListParams { run_id: big.run_id })
        .await
        .unwrap();
    assert_eq!(steps[0].output, Some(serde_json::json!(20 * 1024 * 1024)));
    c.still_works(2).await;
}

#[tokio::test]
async fn a_step_output_that_cannot_be_serialized_is_dead_lettered_with_its_code() {
    let c = case("unserializable").await;
    let bad = Unserializable::enqueue(&c.jobs, Item { id: 1 })
        .await
        .unwrap();
    let fine = Good::enqueue(&c.jobs, Item { id: 1 }).await.unwrap();
    let ran = c.tick().await;
    let failed = outcome(&ran, bad.id);
    assert_eq!(failed.outcome, ExecutionOutcome::DeadLettered);
    assert_eq!(failed.code, Some(ErrorCode::StepOutputUnserializable));
    assert_eq!(outcome(&ran, fine.id).outcome, ExecutionOutcome::Completed);
    let row = c.row(bad.id).await;
    assert_eq!(
        row.last_error_code.as_deref(),
        Some("X_STEP_OUTPUT_UNSERIALIZABLE")
    );
    assert_eq!(row.attempt, 1, "terminal: not retried");
    assert!(
        c.jobs
            .driver()
            .step_list(&StepListParams { run_id: bad.run_id })
            .await
            .unwrap()
            .is_empty(),
        "nothing half-written"
    );
    c.still_works(2).await;
}

#[tokio::test]
async fn a_job_removed_from_the_code_is_handed_back_uncounted_on_postgres() {
    let c = case("unknown_name").await;
    let ghost = Good::enqueue(&c.jobs, Item { id: 1 }).await.unwrap();
    c.sql(
        "update {s}.x_jobs set name = 'retired_job' where id = $1",
        ghost.id,
    )
    .await;
    let fine = Good::enqueue(&c.jobs, Item { id: 2 }).await.unwrap();
    let ran = c.tick().await;
    assert_eq!(outcome(&ran, ghost.id).outcome, ExecutionOutcome::Deferred);
    assert_eq!(outcome(&ran, fine.id).outcome, ExecutionOutcome::Completed);
    let row = c.row(ghost.id).await;
    assert_eq!(
        row.state,
        JobState::Ready,
        "kept for a worker that knows it"
    );
    assert_eq!(row.attempt, 0, "a deferral is not an attempt");
    assert!(row.run_at > c.jobs.now(), "not handed out again at once");
    c.still_works(3).await;
    // Once a visibility timeout passes it is offered again, and deferred again: never lost.
    c.clock.advance(Duration::from_secs(31));
    let ran = c.tick().await;
    assert_eq!(outcome(&ran, ghost.id).outcome, ExecutionOutcome::Deferred);
    assert_eq!(c.row(ghost.id).await.attempt, 0);
}

#[tokio::test]
async fn a_row_state_this_build_does_not_know_is_refused_by_name_and_the_worker_carries_on() {
    let c = case("unknown_state").await;
    let odd = Good::enqueue(&c.jobs, Item { id: 1 }).await.unwrap();
    c.sql(
        "update {s}.x_jobs set state = 'quarantined' where id = $1",
        odd.id,
    )
    .await;
    let fine = Good::enqueue(&c.jobs, Item { id: 2 }).await.unwrap();
    let ran = c.tick().await;
    assert_eq!(ran.len(), 1, "the unknown row is not claimed: {ran:?}");
    assert_eq!(outcome(&ran, fine.id).outcome, ExecutionOutcome::Completed);
    let read = c.jobs.job(odd.id).await.unwrap_err();
    assert_eq!(read.code(), Some(ErrorCode::JobRowStatusUnknown), "{read}");
    assert!(read.message().contains("quarantined"));
    let stats = c.jobs.stats().await.unwrap_err();
    assert_eq!(
        stats.code(),
        Some(ErrorCode::JobRowStatusUnknown),
        "{stats}"
    );
    c.still_works(3).await;
    assert_eq!(c.rows().await, 3, "nothing lost");
}

#[tokio::test]
async fn a_step_status_this_build_does_not_know_never_reruns_the_step() {
    let c = case("unknown_step_status").await;
    let job = TwoSteps::enqueue(&c.jobs, Item { id: 1 }).await.unwrap();
    let ran = c.tick().await;
    assert_eq!(outcome(&ran, job.id).outcome, ExecutionOutcome::Retried);
    assert_eq!(c.steps.runs("first"), 1);
    sqlx::query(AssertSqlSafe(format!(
        "update {}.x_job_steps set status = 'teleported' where run_id = $1 and name = 'first'",
        c.schema
    )))
    .bind(job.run_id)
    .execute(&c.pool)
    .await
    .unwrap();
    c.clock.advance(Duration::from_secs(2));
    let ran = c.tick().await;
    let failed = outcome(&ran, job.id);
    assert_eq!(failed.outcome, ExecutionOutcome::DeadLettered);
    assert_eq!(failed.code, Some(ErrorCode::StepRecordInvalid));
    assert_eq!(
        c.steps.runs("first"),
        1,
        "an unknown status never re-runs a step"
    );
    c.still_works(2).await;
}

#[tokio::test]
async fn an_invalid_run_id_is_refused_on_postgres_and_inserts_nothing() {
    let c = case("invalid_run_id").await;
    for bad in [
        "6F9619FF-8B86-D011-B42D-00C04FC964FF",
        "not-a-uuid",
        "",
        "6f9619ff8b86d011b42d00c04fc964ff0",
        "'; drop table x_jobs; --",
    ] {
        let error = Good::enqueue_with(&c.jobs, Item { id: 1 }, EnqueueOptions::new().run_id(bad))
            .await
            .unwrap_err();
        assert_eq!(error.code(), Some(ErrorCode::IdInvalid), "{bad:?}: {error}");
    }
    assert_eq!(c.rows().await, 0);
    c.still_works(1).await;
}

#[tokio::test]
async fn durations_from_configuration_are_checked_when_they_are_used() {
    // As a config file would hold them: parsed, trimmed, refused with X_INVARIANT.
    for (text, want) in [
        ("30s", Some(Duration::from_secs(30))),
        (" 1h 30m ", Some(Duration::from_secs(5400))),
        ("3d", Some(Duration::from_secs(3 * 86_400))),
        ("250ms", Some(Duration::from_millis(250))),
        ("0s", None),
        ("-1s", None),
        ("", None),
        ("30", None),
        ("3 fortnights", None),
        ("99999999999999999999999d", None),
        ("1s; drop table x_jobs", None),
    ] {
        match (parse_duration(text), want) {
            (Ok(got), Some(want)) => assert_eq!(got, want, "{text:?}"),
            (Err(e), None) => {
                assert_eq!(e.code(), Some(ErrorCode::Invariant), "{text:?}");
                assert!(e.fix().is_some());
            }
            (got, want) => panic!("{text:?}: {got:?}, wanted {want:?}"),
        }
    }
    // A job that sleeps for a configured duration: a bad one dead-letters that run, with the
    // code, and the worker carries on; a good one parks.
    let c = case("configured_duration").await;
    let bad = ConfiguredNap::enqueue(
        &c.jobs,
        Nap {
            id: 1,
            every: "3 fortnights".into(),
        },
    )
    .await
    .unwrap();
    let fine = ConfiguredNap::enqueue(
        &c.jobs,
        Nap {
            id: 2,
            every: "1h".into(),
        },
    )
    .await
    .unwrap();
    let ran = c.tick().await;
    let failed = outcome(&ran, bad.id);
    assert_eq!(failed.code, Some(ErrorCode::Invariant));
    assert_eq!(failed.outcome, ExecutionOutcome::DeadLettered);
    assert_eq!(outcome(&ran, fine.id).outcome, ExecutionOutcome::Suspended);
    c.clock.advance(Duration::from_secs(3600));
    let ran = c.tick().await;
    assert_eq!(outcome(&ran, fine.id).outcome, ExecutionOutcome::Completed);
    c.still_works(3).await;
}

/// jsonb refuses `\u0000` in a string. An input holding one is refused at enqueue with a code
/// that says so (not a retryable driver failure: retrying can never store it), and a step
/// output holding one fails its run for good with `X_STEP_OUTPUT_UNSERIALIZABLE`.
#[tokio::test]
async fn a_nul_character_in_an_input_or_a_step_output_is_refused_with_a_clear_code() {
    let c = case("nul_character").await;
    let refused = BigBlob::enqueue(
        &c.jobs,
        Blob {
            id: 1,
            data: "secret\u{0}tail".into(),
        },
    )
    .await
    .unwrap_err();
    assert_eq!(
        refused.code(),
        Some(ErrorCode::JobInputInvalid),
        "{refused}"
    );
    assert!(!refused.to_string().contains("secret"), "{refused}");
    assert_eq!(c.rows().await, 0);

    let bad = NulOutput::enqueue(&c.jobs, Item { id: 1 }).await.unwrap();
    let fine = Good::enqueue(&c.jobs, Item { id: 1 }).await.unwrap();
    let ran = c.tick().await;
    let failed = outcome(&ran, bad.id);
    assert_eq!(
        failed.code,
        Some(ErrorCode::StepOutputUnserializable),
        "{failed:?}"
    );
    assert_eq!(failed.outcome, ExecutionOutcome::DeadLettered);
    assert_eq!(outcome(&ran, fine.id).outcome, ExecutionOutcome::Completed);
    c.still_works(2).await;
}
