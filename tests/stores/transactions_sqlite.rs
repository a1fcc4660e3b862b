//! SQLite: `Jobs::open` by URL, the transactional outbox in the caller's own
//! `sqlx::Transaction<Sqlite>`, events inside transactions, and the `data_version` wake across
//! connections (as another process on the file has).

use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use jobs::clock::TestClock;
use jobs::driver::{JobDriver, SqliteDriver, StepListParams, WakeReceiver, WakeSignal};
use jobs::prelude::*;
use jobs::sqlx::{self, sqlite::SqlitePoolOptions, SqlitePool};
use support::sqlite::{driver_in, TempDir};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Signup {
    user_id: u64,
}

#[job(name = "transactions_sqlite.send_welcome", key = "welcome:{user_id}", tenant = none, queue = "email")]
async fn send_welcome(_run: Run, _input: Signup) -> Result<(), JobError> {
    Ok(())
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Invoice {
    account: String,
}

#[job(name = "transactions_sqlite.await_payment", key = "await-payment:{account}", tenant = none)]
async fn await_payment(run: Run, input: Invoice) -> Result<Option<u64>, JobError> {
    run.wait_for_event("invoice.paid", &input.account, "1d")
        .await
}

/// The app's own pool on the same file, as an app that keeps its tables beside the jobs has.
async fn app_pool(dir: &TempDir) -> SqlitePool {
    SqlitePoolOptions::new()
        .max_connections(2)
        .connect(&dir.url())
        .await
        .expect("the app's pool opens the file")
}

async fn rows(pool: &SqlitePool, table: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!("select count(*) from {table}")))
        .fetch_one(pool)
        .await
        .expect("count")
}

#[tokio::test]
async fn open_picks_the_store_from_the_url_and_migrates_it() {
    let dir = TempDir::new("open_by_url");
    let jobs = Jobs::open(&dir.url()).await.expect("a sqlite URL opens");
    assert_eq!(jobs.driver().name(), "sqlite");
    let queued = SendWelcome::enqueue(&jobs, Signup { user_id: 1 })
        .await
        .expect("the tables exist: open migrated them");
    drop(jobs);
    // Durable: a second open of the same file finds the job.
    let again = Jobs::open(&dir.url()).await.expect("reopens");
    let row = again.job(queued.id).await.expect("read").expect("kept");
    assert_eq!(row.state, JobState::Ready);

    assert_eq!(
        Jobs::open("memory:").await.expect("memory").driver().name(),
        "memory"
    );
    let refused = Jobs::open("nats://127.0.0.1/")
        .await
        .expect_err("no such store");
    assert_eq!(refused.code(), Some(ErrorCode::DriverUrlInvalid));
    let missing = format!("sqlite://{}/no/such/dir/jobs.db", dir.path().display());
    let refused = Jobs::open(&missing).await.expect_err("an unopenable file");
    assert_eq!(refused.code(), Some(ErrorCode::DriverUrlInvalid));
    assert_eq!(refused.class(), jobs::ErrorClass::Terminal);
}

#[tokio::test]
async fn enqueue_in_a_committed_transaction_creates_the_job() {
    let dir = TempDir::new("outbox_commit");
    let jobs = Jobs::new(driver_in(&dir).await);
    let pool = app_pool(&dir).await;
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.expect("begin");
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
    assert_eq!(rows(&pool, "x_jobs").await, 1);
    // An enqueue in the caller's transaction stores the priority it names.
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.expect("begin");
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
    let dir = TempDir::new("outbox_rollback");
    let jobs = Jobs::new(driver_in(&dir).await);
    let pool = app_pool(&dir).await;
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.expect("begin");
    let queued = SendWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id: 2 })
        .await
        .expect("enqueue in tx");
    tx.rollback().await.expect("rollback");
    assert!(jobs.job(queued.id).await.expect("read").is_none());
    assert_eq!(rows(&pool, "x_jobs").await, 0);
}

#[tokio::test]
async fn enqueue_in_on_the_memory_driver_is_refused_naming_the_drivers_that_join() {
    let dir = TempDir::new("outbox_memory");
    let _file = driver_in(&dir).await;
    let jobs = Jobs::memory();
    let pool = app_pool(&dir).await;
    let mut conn = pool.acquire().await.expect("conn");
    let refused = SendWelcome::enqueue_in(&jobs, &mut conn, Signup { user_id: 3 })
        .await
        .expect_err("memory has no transaction to join");
    assert_eq!(refused.code(), Some(ErrorCode::DriverUnavailable));
    assert!(
        refused.message().contains("SQLite"),
        "{}",
        refused.message()
    );
    assert_eq!(rows(&pool, "x_jobs").await, 0);
}

/// Runs the waiting job until it parks, on a frozen clock over SQLite.
async fn parked_wait(driver: SqliteDriver, account: &str) -> (Jobs, jobs::Worker, Enqueued) {
    let jobs = Jobs::with_clock(Arc::new(driver), Arc::new(TestClock::new()));
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
    let dir = TempDir::new("event_rollback");
    let (jobs, worker, queued) = parked_wait(driver_in(&dir).await, "acct-1").await;
    let pool = app_pool(&dir).await;
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.expect("begin");
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
    assert_eq!(rows(&pool, "x_job_events").await, 0);
}

#[tokio::test]
async fn an_event_published_in_a_committed_transaction_wakes_the_parked_run_at_commit() {
    let dir = TempDir::new("event_commit");
    let (jobs, worker, queued) = parked_wait(driver_in(&dir).await, "acct-2").await;
    let pool = app_pool(&dir).await;
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.expect("begin");
    jobs.publish_event_in(&mut tx, "invoice.paid", "acct-2", &42_u64)
        .await
        .expect("publish in tx");
    let parked = jobs.job(queued.id).await.expect("read").expect("row");
    assert!(
        parked.run_at > jobs.now(),
        "the uncommitted wake is not seen"
    );
    tx.commit().await.expect("commit");
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

#[tokio::test]
async fn a_commit_on_another_connection_announces_its_queue() {
    let dir = TempDir::new("wake_across");
    // Two drivers on one file: each has its own connections, as two processes would.
    let listener = driver_in(&dir).await;
    let enqueuer = Jobs::new(driver_in(&dir).await);
    let mut wakes = listener
        .wake_listen()
        .await
        .expect("listen")
        .expect("sqlite has a wake");
    assert_eq!(next_signal(&mut wakes).await, WakeSignal::Live);
    let sent = Instant::now();
    SendWelcome::enqueue(&enqueuer, Signup { user_id: 7 })
        .await
        .expect("enqueue");
    assert_eq!(
        next_signal(&mut wakes).await,
        WakeSignal::Queue("email".into())
    );
    eprintln!("wake across connections: {:?}", sent.elapsed());
    // A delayed job announces its due time (an idle worker arms a timer), not its queue.
    let later = SendWelcome::enqueue_with(
        &enqueuer,
        Signup { user_id: 8 },
        EnqueueOptions::default().delay(Duration::from_secs(3600)),
    )
    .await
    .expect("a delayed job");
    let due = enqueuer
        .job(later.id)
        .await
        .expect("read")
        .expect("stored")
        .run_at;
    assert_eq!(
        next_signal(&mut wakes).await,
        WakeSignal::Due {
            queue: "email".into(),
            at: due
        }
    );
    let quiet = tokio::time::timeout(Duration::from_millis(200), wakes.recv()).await;
    assert!(quiet.is_err(), "nothing else is announced: {quiet:?}");
}

/// A worker over `jobs` that runs `SendWelcome`.
fn welcome_worker(jobs: &Jobs) -> jobs::Worker {
    let mut registry = jobs::Registry::new();
    registry.register::<SendWelcome>().expect("register");
    jobs.worker().registry(registry).build().expect("worker")
}

#[tokio::test]
async fn an_in_memory_database_is_one_database_for_the_drivers_writes_reads_and_the_callers_pool() {
    let driver = SqliteDriver::connect("sqlite::memory:")
        .await
        .expect("opens");
    driver.migrate().await.expect("migrates");
    let jobs = Jobs::new(driver.clone());
    let queued = SendWelcome::enqueue(&jobs, Signup { user_id: 11 })
        .await
        .expect("enqueue");
    let row = jobs.job(queued.id).await.expect("read").expect("seen");
    assert_eq!(
        row.state,
        JobState::Ready,
        "reads see the writer's database"
    );
    assert_eq!(rows(driver.pool(), "x_jobs").await, 1, "so does the pool");
    let mut tx = driver.pool().begin().await.expect("begin");
    SendWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id: 12 })
        .await
        .expect("enqueue in the caller's transaction");
    tx.commit().await.expect("commit");
    let pass = welcome_worker(&jobs).tick().await.expect("tick");
    assert_eq!(pass.len(), 2, "both jobs are in the one database");
    assert!(pass
        .iter()
        .all(|run| run.outcome == jobs::ExecutionOutcome::Completed));
}

#[tokio::test]
async fn a_callers_transaction_on_the_drivers_pool_and_the_drivers_own_writes_take_turns() {
    let dir = TempDir::new("caller_pool");
    let driver = driver_in(&dir).await;
    let jobs = Jobs::new(driver.clone());
    let mut tx = driver
        .pool()
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("the caller takes the write lock");
    SendWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id: 21 })
        .await
        .expect("enqueue in the caller's transaction");
    // The driver writes through a connection of its own: this enqueue waits in SQLite's busy
    // handler for the caller's commit, then lands, with no error.
    let meanwhile = tokio::spawn({
        let jobs = jobs.clone();
        async move { SendWelcome::enqueue(&jobs, Signup { user_id: 22 }).await }
    });
    tx.commit().await.expect("commit");
    meanwhile
        .await
        .expect("join")
        .expect("the driver's enqueue lands after the caller's commit");
    assert_eq!(rows(driver.pool(), "x_jobs").await, 2);
    let pass = welcome_worker(&jobs).tick().await.expect("tick");
    assert_eq!(pass.len(), 2);
}

#[tokio::test]
async fn a_closed_driver_refuses_writes_as_unavailable_and_its_file_keeps_what_it_wrote() {
    let dir = TempDir::new("close");
    let driver = driver_in(&dir).await;
    let jobs = Jobs::new(driver.clone());
    let queued = SendWelcome::enqueue(&jobs, Signup { user_id: 31 })
        .await
        .expect("enqueue");
    driver.close().await;
    let refused = SendWelcome::enqueue(&jobs, Signup { user_id: 32 })
        .await
        .expect_err("the driver is closed");
    assert_eq!(refused.code(), Some(ErrorCode::DriverUnavailable));
    assert_eq!(refused.class(), jobs::ErrorClass::Retryable);
    let again = Jobs::new(driver_in(&dir).await);
    let row = again.job(queued.id).await.expect("read").expect("kept");
    assert_eq!(row.state, JobState::Ready);
}

#[tokio::test]
async fn a_process_that_only_enqueues_keeps_its_wal_checkpointed() {
    let dir = TempDir::new("wal_bound");
    let jobs = Jobs::new(driver_in(&dir).await);
    for user_id in 0..3_000 {
        SendWelcome::enqueue(&jobs, Signup { user_id })
            .await
            .expect("enqueue");
    }
    let wal = std::fs::metadata(dir.path().join("jobs.db-wal"))
        .expect("the WAL")
        .len();
    // SQLite checkpoints at 1,000 pages of 4 KiB; without its checkpoints these 3,000 jobs
    // leave about 80 MB of WAL.
    assert!(wal < 8 << 20, "the WAL grew to {wal} bytes");
}
