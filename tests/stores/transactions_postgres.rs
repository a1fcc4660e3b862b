//! Postgres: the transactional outbox, events inside transactions, and the LISTEN/NOTIFY wake.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use jobs::clock::TestClock;
use jobs::driver::{JobDriver, PostgresDriver, StepListParams, WakeReceiver, WakeSignal};
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};
use jobs::testing::TestKit;
use support::pg;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Signup {
    user_id: u64,
}

#[job(key = "welcome:{user_id}", tenant = none, queue = "email")]
async fn send_welcome(_run: Run, _input: Signup) -> Result<(), JobError> {
    Ok(())
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Invoice {
    account: String,
}

#[job(key = "await-payment:{account}", tenant = none)]
async fn await_payment(run: Run, input: Invoice) -> Result<Option<u64>, JobError> {
    run.wait_for_event("invoice.paid", &input.account, "1d")
        .await
}

async fn postgres(test: &str) -> (PostgresDriver, sqlx::PgPool, String) {
    let (pool, schema) = pg::schema(test).await;
    let driver = PostgresDriver::new(pool.clone(), &schema).expect("schema");
    (driver, pool, schema)
}

async fn rows(pool: &sqlx::PgPool, schema: &str, table: &str) -> i64 {
    sqlx::query_scalar(AssertSqlSafe(format!(
        "select count(*) from {schema}.{table}"
    )))
    .fetch_one(pool)
    .await
    .expect("count")
}

#[tokio::test]
async fn enqueue_in_a_committed_transaction_creates_the_job() {
    let (driver, pool, schema) = postgres("outbox_commit").await;
    let jobs = Jobs::new(driver);
    let mut tx = pool.begin().await.expect("begin");
    let queued = SendWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id: 1 })
        .await
        .expect("enqueue in tx");
    assert!(!queued.deduped);
    // Not visible outside the transaction before it commits.
    assert!(jobs.job(queued.id).await.expect("read").is_none());
    let again = SendWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id: 1 })
        .await
        .expect("dedupe in tx");
    assert!(
        again.deduped && again.id == queued.id,
        "dedupe sees the tx's own row"
    );
    tx.commit().await.expect("commit");
    let row = jobs.job(queued.id).await.expect("read").expect("committed");
    assert_eq!(row.state, JobState::Ready);
    assert_eq!(rows(&pool, &schema, "x_jobs").await, 1);
    // An enqueue in the caller's transaction stores the priority it names.
    let mut tx = pool.begin().await.expect("begin");
    let urgent = SendWelcome::enqueue_in_with(
        &jobs,
        &mut tx,
        Signup { user_id: 2 },
        jobs::EnqueueOptions::new().priority(4),
    )
    .await
    .expect("enqueue in tx");
    tx.commit().await.expect("commit");
    let row = jobs.job(urgent.id).await.expect("read").expect("committed");
    assert_eq!(row.priority, 4);
}

#[tokio::test]
async fn enqueue_in_a_rolled_back_transaction_leaves_nothing() {
    let (driver, pool, schema) = postgres("outbox_rollback").await;
    let jobs = Jobs::new(driver);
    let mut tx = pool.begin().await.expect("begin");
    let queued = SendWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id: 2 })
        .await
        .expect("enqueue in tx");
    tx.rollback().await.expect("rollback");
    assert!(jobs.job(queued.id).await.expect("read").is_none());
    assert_eq!(rows(&pool, &schema, "x_jobs").await, 0);
    // The key is free: a later enqueue is a new job.
    let later = SendWelcome::enqueue(&jobs, Signup { user_id: 2 })
        .await
        .expect("enqueue");
    assert!(!later.deduped);
}

#[tokio::test]
async fn enqueue_in_on_the_memory_driver_is_refused_with_a_fix() {
    let kit = TestKit::new();
    let (_driver, pool, _schema) = postgres("outbox_memory").await;
    let mut conn = pool.acquire().await.expect("conn");
    let refused = SendWelcome::enqueue_in(kit.jobs(), &mut conn, Signup { user_id: 3 })
        .await
        .expect_err("memory has no transaction to join");
    assert_eq!(refused.code(), Some(ErrorCode::DriverUnavailable));
    assert!(refused.message().contains("Postgres and SQLite drivers"));
}

/// A connection of another database, as a third driver's would be.
struct OtherDatabase;

impl jobs::driver::CallerConnection for OtherDatabase {
    fn connection(&mut self) -> jobs::driver::caller_tx::CallerConn<'_> {
        self
    }
}

#[tokio::test]
async fn enqueue_in_on_another_databases_connection_is_refused_and_writes_nothing() {
    let (driver, pool, schema) = postgres("outbox_foreign").await;
    let jobs = Jobs::new(driver);
    let refused = SendWelcome::enqueue_in(&jobs, &mut OtherDatabase, Signup { user_id: 4 })
        .await
        .expect_err("a Postgres driver cannot join another database's transaction");
    assert_eq!(refused.code(), Some(ErrorCode::DriverUnavailable));
    assert!(
        refused.message().contains("PgConnection"),
        "{}",
        refused.message()
    );
    let refused = jobs
        .publish_event_in(&mut OtherDatabase, "invoice.paid", "acct-9", &1_u64)
        .await
        .expect_err("nor publish on it");
    assert_eq!(refused.code(), Some(ErrorCode::DriverUnavailable));
    assert_eq!(rows(&pool, &schema, "x_jobs").await, 0);
    assert_eq!(rows(&pool, &schema, "x_job_events").await, 0);
}

/// Runs the waiting job until it parks, on a frozen clock over Postgres.
async fn parked_wait(driver: PostgresDriver, account: &str) -> (Jobs, jobs::Worker, Enqueued) {
    let clock = TestClock::new();
    let jobs = Jobs::with_clock(Arc::new(driver), Arc::new(clock));
    let mut registry = jobs::Registry::new();
    registry.register::<AwaitPayment>().expect("register");
    let worker = jobs.worker().registry(registry).build().expect("worker");
    let queued = AwaitPayment::enqueue(
        &jobs,
        Invoice {
            account: account.into(),
        },
    )
    .await
    .expect("enqueue");
    let pass = worker.tick().await.expect("tick");
    assert_eq!(pass[0].outcome, jobs::ExecutionOutcome::Suspended);
    (jobs, worker, queued)
}

#[tokio::test]
async fn an_event_published_in_a_rolled_back_transaction_matches_nothing() {
    let (driver, pool, _schema) = postgres("event_rollback").await;
    let (jobs, worker, queued) = parked_wait(driver, "acct-1").await;
    let mut tx = pool.begin().await.expect("begin");
    jobs.publish_event_in(&mut tx, "invoice.paid", "acct-1", &10_u64)
        .await
        .expect("publish in tx");
    tx.rollback().await.expect("rollback");
    let row = jobs.job(queued.id).await.expect("read").expect("row");
    assert_eq!(row.state, JobState::Suspended);
    assert!(
        row.run_at > jobs.now(),
        "a rolled-back publish wakes nothing"
    );
    assert!(worker.tick().await.expect("tick").is_empty());
}

#[tokio::test]
async fn a_wait_that_began_before_the_commit_matches_the_event_and_wakes_at_commit() {
    let (driver, pool, _schema) = postgres("event_commit").await;
    // The transaction publishes BEFORE the wait begins, and commits after the run parked.
    let mut tx = pool.begin().await.expect("begin");
    // The publisher reads the same (frozen) time as the worker: an event expires by its clock.
    let jobs_for_tx = Jobs::with_clock(Arc::new(driver.clone()), Arc::new(TestClock::new()));
    jobs_for_tx
        .publish_event_in(&mut tx, "invoice.paid", "acct-2", &42_u64)
        .await
        .expect("publish in tx");
    let (jobs, worker, queued) = parked_wait(driver, "acct-2").await;
    let parked = jobs.job(queued.id).await.expect("read").expect("row");
    assert!(
        parked.run_at > jobs.now(),
        "the uncommitted event was not seen"
    );
    tx.commit().await.expect("commit");

    // The commit woke the parked run, and the wait's snapshot could not see the event, so it
    // is the wait's even though its stamp is older than the wait.
    let woken = jobs.job(queued.id).await.expect("read").expect("row");
    assert!(woken.run_at <= jobs.now(), "the commit woke the run");
    let pass = worker.tick().await.expect("tick");
    assert_eq!(pass.len(), 1);
    assert_eq!(pass[0].outcome, jobs::ExecutionOutcome::Completed);
    let steps = jobs
        .driver()
        .step_list(&StepListParams {
            run_id: queued.run_id,
        })
        .await
        .expect("steps");
    assert_eq!(steps[0].output, Some(serde_json::json!(42)));
}

async fn next_signal(wakes: &mut WakeReceiver) -> WakeSignal {
    tokio::time::timeout(Duration::from_secs(10), wakes.recv())
        .await
        .expect("a wake signal within 10 s")
        .expect("the wake stays open")
}

/// The driver's wake, once its probe came back (the first signal is always `Live`).
async fn proven_wake(driver: &PostgresDriver) -> WakeReceiver {
    let mut wakes = driver
        .wake_listen()
        .await
        .expect("listen")
        .expect("postgres has a wake");
    assert_eq!(
        next_signal(&mut wakes).await,
        WakeSignal::Live,
        "the probe comes back first"
    );
    wakes
}

/// Reads every signal that arrives within a short bound (a quiet channel proves silence only
/// up to the bound; the positive cases above show delivery takes milliseconds).
async fn drain(wakes: &mut WakeReceiver) -> Vec<WakeSignal> {
    let mut seen = Vec::new();
    while let Ok(Some(signal)) =
        tokio::time::timeout(Duration::from_millis(300), wakes.recv()).await
    {
        seen.push(signal);
    }
    seen
}

#[tokio::test]
async fn the_wake_is_proven_then_announces_queues_throttled_by_the_client() {
    let (driver, _pool, _schema) = postgres("wake_notify").await;
    let mut wakes = proven_wake(&driver).await;

    // Another connection (another process, as far as the listener can tell) enqueues. The
    // throttle runs on the machine's time, not the `Jobs` clock: a frozen clock changes nothing.
    let enqueuer = Jobs::with_clock(Arc::new(driver.clone()), Arc::new(TestClock::new()));
    SendWelcome::enqueue(&enqueuer, Signup { user_id: 10 })
        .await
        .expect("enqueue");
    assert_eq!(
        next_signal(&mut wakes).await,
        WakeSignal::Queue("email".into())
    );

    // The next job of the queue: announced by itself when the window ended, else by one
    // trailing announcement after it committed. Either way exactly one, after its commit.
    SendWelcome::enqueue(&enqueuer, Signup { user_id: 11 })
        .await
        .expect("enqueue");
    assert_eq!(
        next_signal(&mut wakes).await,
        WakeSignal::Queue("email".into())
    );
    // A dedupe announces nothing.
    SendWelcome::enqueue(&enqueuer, Signup { user_id: 10 })
        .await
        .expect("dedupe");
    assert_eq!(drain(&mut wakes).await, Vec::<WakeSignal>::new());
    // Due later: its due time is announced (an idle worker arms a timer), not its queue.
    let later = SendWelcome::enqueue_with(
        &enqueuer,
        Signup { user_id: 12 },
        EnqueueOptions::new()
            .delay(Duration::from_secs(60))
            .queue("later"),
    )
    .await
    .expect("enqueue later");
    let due = enqueuer
        .job(later.id)
        .await
        .expect("read")
        .expect("stored")
        .run_at;
    assert_eq!(
        drain(&mut wakes).await,
        vec![WakeSignal::Due {
            queue: "later".into(),
            at: due
        }]
    );
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct TenantSignup {
    org: String,
    user_id: u64,
}

#[job(key = "org-welcome:{org}:{user_id}", tenant = org, queue = "email")]
async fn welcome_org_member(_run: Run, _input: TenantSignup) -> Result<(), JobError> {
    Ok(())
}

#[tokio::test]
async fn a_burst_into_one_queue_announces_it_at_most_twice_a_window() {
    let (driver, _pool, _schema) = postgres("wake_burst").await;
    let mut wakes = proven_wake(&driver).await;
    let enqueuer = Jobs::new(driver.clone());
    // 40 tenants, one job each, as fast as one connection goes.
    let started = std::time::Instant::now();
    for n in 0..40 {
        WelcomeOrgMember::enqueue(
            &enqueuer,
            TenantSignup {
                org: format!("org-{n}"),
                user_id: n,
            },
        )
        .await
        .expect("enqueue");
    }
    let took = started.elapsed();
    let seen = drain(&mut wakes).await;
    assert!(
        seen.iter().all(|s| *s == WakeSignal::Queue("email".into())),
        "{seen:?}"
    );
    // The first at once, then at most one more in each window the burst spanned and one
    // trailing after it, whatever the machine's pace (a slow one announces more jobs itself).
    let windows = took.as_millis() / 25 + 1;
    assert!(
        !seen.is_empty() && seen.len() as u128 <= 2 * windows + 1,
        "{} announcements for 40 enqueues over {took:?}",
        seen.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_listener_is_reported_and_the_poll_still_delivers() {
    let (driver, pool, schema) = postgres("wake_lost").await;
    let mut wakes = proven_wake(&driver).await;
    // Kill the LISTEN session of this schema's wake channel (other tests' sessions live on).
    let killed: Vec<bool> = sqlx::query_scalar(
        "select pg_terminate_backend(pid) from pg_stat_activity
         where query ilike 'listen %' and query like '%' || $1 || '%' and pid <> pg_backend_pid()",
    )
    .bind(&schema)
    .fetch_all(&pool)
    .await
    .expect("terminate");
    assert!(!killed.is_empty());
    let mut seen = Vec::new();
    while !seen.contains(&WakeSignal::Lost) {
        seen.push(next_signal(&mut wakes).await);
    }
    // Re-dialled and proven again.
    while next_signal(&mut wakes).await != WakeSignal::Live {}

    // Whatever the listener does, a started worker's poll delivers the job.
    let jobs = Jobs::new(driver);
    let worker = jobs
        .worker()
        .queues(["email"])
        .poll_interval(Duration::from_millis(50))
        .idle_poll_max(Duration::from_millis(200))
        .build()
        .expect("worker");
    let running = worker.start();
    let queued = SendWelcome::enqueue(&jobs, Signup { user_id: 20 })
        .await
        .expect("enqueue");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let row = jobs.job(queued.id).await.expect("read").expect("row");
        if row.state == JobState::Done {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the job was not picked up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    running.shutdown().await;
}
