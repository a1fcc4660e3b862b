//! The SQLite driver's sub-ports through the public API, beyond the conformance cases: the
//! atomic task fire (and two fires racing from two connections), task pauses and fires, the
//! scheduler's leader lease, `with_lock` from two clients of one file, the ledger of backfill
//! passes, and the book (the driver's own and [`SqliteBook`] on the same file).

use crate::support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jobs::backfill::{BackfillRequest, PassStatus};
use jobs::clock::{Clock, TestClock, Timestamp};
use jobs::driver::backfill_store::BackfillListParams;
use jobs::driver::scheduler_store::{
    TaskFireParams, TaskFiresParams, TaskPauseParams, TaskPausedParams, TaskResumeParams,
};
use jobs::driver::{JobDriver, SqliteBook, SqliteDriver};
use jobs::ledger::{LedgerBook, PostingLinesParams, PostingWrite, PostingWritten};
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};
use jobs::{CatchUp, LockOptions, Registry, Scheduler, Task, TaskDescriptor, Worker};
use support::sqlite::{driver_in, TempDir};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Slot {
    at: String,
}

#[job(key = "tick:{at}", tenant = none)]
async fn lite_tick(_run: Run, _input: Slot) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "audit:{at}", tenant = none, queue = "audit")]
async fn lite_audit(_run: Run, _input: Slot) -> Result<(), JobError> {
    Ok(())
}

/// Two jobs every five minutes.
struct Every5;

impl Task for Every5 {
    const DESCRIPTOR: TaskDescriptor = TaskDescriptor {
        name: "every5",
        cron: "*/5 * * * *",
        tz: "Europe/Paris",
        catch_up: CatchUp::Skip,
        max_catch_up: 10,
    };
    fn entries(at: &Occurrence) -> Vec<Entry> {
        let slot = || Slot {
            at: at.local().to_rfc3339(),
        };
        vec![
            Entry::of::<LiteTick>(slot()),
            Entry::of::<LiteAudit>(slot()),
        ]
    }
}

fn at(text: &str) -> Timestamp {
    text.parse().expect("an RFC 3339 instant")
}

async fn count(driver: &SqliteDriver, table: &str) -> i64 {
    sqlx::query_scalar(AssertSqlSafe(format!("select count(*) from {table}")))
        .fetch_one(driver.pool())
        .await
        .expect("count")
}

fn fire(
    task: &str,
    expected: Option<Timestamp>,
    to: Timestamp,
    keys: &[&str],
    now: Timestamp,
) -> TaskFireParams {
    let jobs = keys
        .iter()
        .map(|key| jobs::driver::EnqueueRequest {
            id: uuid::Uuid::now_v7(),
            run_id: uuid::Uuid::now_v7(),
            name: "lite_tick".into(),
            queue: "default".into(),
            input: serde_json::json!({ "at": key }),
            idempotency_key: key.to_string(),
            tenant_id: None,
            max_attempts: 3,
            run_at: now,
            priority: 0,
            on_conflict: Default::default(),
            traceparent: None,
            actor: None,
            unique_for: None,
            dependencies: None,
            now,
        })
        .collect();
    TaskFireParams {
        task: task.into(),
        expected,
        watermark: to,
        occurrence: Some(to),
        jobs,
        now,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_fire_moves_the_watermark_and_inserts_the_jobs_in_one_transaction() {
    let dir = TempDir::new("sqlite_atomic_fire");
    let driver = driver_in(&dir).await;
    // Another connection to the file: a second scheduler process.
    let other = driver_in(&dir).await;
    let store = driver
        .scheduler_store()
        .expect("sqlite has a scheduler store");
    let now = at("2030-01-01T00:00:00Z");
    let t1 = at("2030-01-01T00:05:00Z");
    let first = store
        .task_fire(&fire("t", None, t1, &["k1", "k2"], now))
        .await
        .unwrap();
    assert!(first.fired);
    assert_eq!(first.jobs.len(), 2);
    assert!(first.jobs.iter().all(|j| !j.deduped));
    assert_eq!(count(&driver, "x_jobs").await, 2);
    // A second fire from the same expected watermark inserts nothing.
    let again = store
        .task_fire(&fire("t", None, t1, &["k3"], now))
        .await
        .unwrap();
    assert!(!again.fired && again.jobs.is_empty());
    assert_eq!(count(&driver, "x_jobs").await, 2);
    // From the right watermark it lands; a live key answers the live row, deduped.
    let t2 = at("2030-01-01T00:10:00Z");
    let next = store
        .task_fire(&fire("t", Some(t1), t2, &["k1", "k4", "k4"], now))
        .await
        .unwrap();
    assert!(next.fired);
    assert_eq!(next.jobs[0].id, first.jobs[0].id);
    assert!(next.jobs[0].deduped && !next.jobs[1].deduped && next.jobs[2].deduped);
    assert_eq!(
        next.jobs[2].id, next.jobs[1].id,
        "a duplicate inside one fire answers its twin"
    );
    assert_eq!(count(&driver, "x_jobs").await, 3);
    let fired = driver
        .job_get(&jobs::driver::JobGetParams {
            id: next.jobs[1].id,
        })
        .await
        .unwrap()
        .expect("stored");
    assert_eq!((fired.state, fired.run_at), (JobState::Ready, now));
    // Two fires racing from one watermark on two connections: exactly one lands.
    let t3 = at("2030-01-01T00:15:00Z");
    let (fire_a, fire_b) = (
        fire("t", Some(t2), t3, &["a"], now),
        fire("t", Some(t2), t3, &["b"], now),
    );
    let other_store = other.scheduler_store().unwrap();
    let (a, b) = tokio::join!(store.task_fire(&fire_a), other_store.task_fire(&fire_b));
    assert_eq!(
        [a.unwrap().fired, b.unwrap().fired]
            .iter()
            .filter(|f| **f)
            .count(),
        1
    );
    assert_eq!(count(&driver, "x_jobs").await, 4);
    let fires = store.task_fires(&TaskFiresParams { now }).await.unwrap();
    assert_eq!(fires.len(), 1);
    assert_eq!((fires[0].occurrence, fires[0].fired_at), (t3, now));
}

#[tokio::test]
async fn an_arming_is_not_a_fire_and_pauses_are_per_task() {
    let dir = TempDir::new("sqlite_pauses");
    let driver = driver_in(&dir).await;
    let store = driver.scheduler_store().unwrap();
    let now = at("2030-01-01T00:00:00Z");
    let mut arm = fire("armed", None, now, &[], now);
    arm.occurrence = None;
    assert!(store.task_fire(&arm).await.unwrap().fired);
    assert!(
        store
            .task_fires(&TaskFiresParams { now })
            .await
            .unwrap()
            .is_empty(),
        "moving a watermark without an occurrence records no fire"
    );
    // A later arming-style move keeps the last fire recorded.
    let t1 = at("2030-01-01T00:05:00Z");
    assert!(
        store
            .task_fire(&fire("armed", Some(now), t1, &[], now))
            .await
            .unwrap()
            .fired
    );
    let t2 = at("2030-01-01T00:10:00Z");
    let mut pass = fire("armed", Some(t1), t2, &[], now);
    pass.occurrence = None;
    assert!(store.task_fire(&pass).await.unwrap().fired);
    let fires = store.task_fires(&TaskFiresParams { now }).await.unwrap();
    assert_eq!(fires.len(), 1);
    assert_eq!(fires[0].occurrence, t1);

    let pause = |task: &str| TaskPauseParams {
        task: task.into(),
        now,
    };
    let paused = |task: Option<&str>| TaskPausedParams {
        task: task.map(str::to_string),
        now,
    };
    store.task_pause(&pause("b")).await.unwrap();
    store.task_pause(&pause("a")).await.unwrap();
    store.task_pause(&pause("a")).await.unwrap();
    assert_eq!(store.task_paused(&paused(None)).await.unwrap(), ["a", "b"]);
    assert_eq!(store.task_paused(&paused(Some("b"))).await.unwrap(), ["b"]);
    assert!(store
        .task_paused(&paused(Some("c")))
        .await
        .unwrap()
        .is_empty());
    let resume = |task: &str| TaskResumeParams {
        task: task.into(),
        now,
    };
    assert!(store.task_resume(&resume("a")).await.unwrap());
    assert!(
        !store.task_resume(&resume("a")).await.unwrap(),
        "not paused"
    );
    assert_eq!(store.task_paused(&paused(None)).await.unwrap(), ["b"]);
}

fn scheduler(jobs: &Jobs, id: &str) -> Scheduler {
    let mut registry = Registry::new();
    registry.register_task::<Every5>().expect("registers");
    jobs.scheduler()
        .registry(registry)
        .id(id)
        .build()
        .expect("builds")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_fires_and_a_stopped_leader_hands_over_at_once() {
    let dir = TempDir::new("sqlite_leader");
    let clock = TestClock::at(at("2030-01-01T00:00:00Z"));
    // Two clients of one file, as two processes would be.
    let first = Arc::new(driver_in(&dir).await);
    let second = Arc::new(driver_in(&dir).await);
    let a = scheduler(
        &Jobs::with_clock(first.clone(), Arc::new(clock.clone())),
        "a",
    );
    let b = scheduler(&Jobs::with_clock(second, Arc::new(clock.clone())), "b");
    assert!(a.tick().await.unwrap().leading);
    assert!(!b.tick().await.unwrap().leading);
    let mut fired = 0;
    while clock.now() < at("2030-01-01T00:10:30Z") {
        clock.advance(Duration::from_secs(1));
        fired += a.tick().await.unwrap().fired.len();
        let standby = b.tick().await.unwrap();
        assert!(!standby.leading && standby.fired.is_empty());
    }
    assert_eq!(fired, 2);
    assert_eq!(count(&first, "x_jobs").await, 4);
    a.start().shutdown().await.unwrap();
    assert_eq!(
        count(&first, "x_scheduler_leader").await,
        0,
        "the lease row is deleted"
    );
    clock.advance(Duration::from_secs(10));
    assert!(
        b.tick().await.unwrap().leading,
        "the standby promotes at its next ask"
    );
    // A stalled leader loses the lease once its TTL passes.
    clock.advance(Duration::from_secs(5));
    assert!(!a.tick().await.unwrap().leading);
    clock.advance(Duration::from_secs(31));
    assert!(
        a.tick().await.unwrap().leading,
        "b stalled past its TTL: a takes over"
    );
    assert!(!b.tick().await.unwrap().leading);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_clients_of_one_file_never_hold_one_lock_at_once() {
    let dir = TempDir::new("sqlite_lock_two_clients");
    let clients = [
        Jobs::new(driver_in(&dir).await),
        Jobs::new(driver_in(&dir).await),
    ];
    let inside = Arc::new(AtomicU32::new(0));
    let tokens = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut calls = Vec::new();
    for i in 0..10 {
        let jobs = clients[i % 2].clone();
        let (inside, tokens) = (inside.clone(), tokens.clone());
        calls.push(tokio::spawn(async move {
            jobs.with_lock(
                "report",
                LockOptions::ttl(Duration::from_secs(30)),
                |guard| async move {
                    assert_eq!(
                        inside.fetch_add(1, Ordering::SeqCst),
                        0,
                        "two holders at once"
                    );
                    tokio::task::yield_now().await;
                    tokens.lock().unwrap().push(guard.token());
                    inside.fetch_sub(1, Ordering::SeqCst);
                    Ok(())
                },
            )
            .await
        }));
    }
    for call in calls {
        call.await.unwrap().unwrap();
    }
    let tokens = tokens.lock().unwrap().clone();
    assert_eq!(tokens.len(), 10);
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "in grant order: {tokens:?}"
    );
}

#[derive(Default)]
struct Counter {
    pages: AtomicU32,
}

#[derive(Debug)]
struct Row {
    id: i64,
}

/// 250 ids, in pages.
async fn ids_after(
    _pass: Pass,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<Row, i64>, JobError> {
    let from = after.unwrap_or(0);
    let rows: Vec<Row> = (from + 1..=250)
        .take(limit as usize)
        .map(|id| Row { id })
        .collect();
    Ok(Page::keyed(rows, |row| row.id))
}

#[backfill(name = "lite.ids", tenant = none, source = ids_after, batch = 100, rate = 50.0)]
async fn touch_ids(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    let counter = pass.context::<Counter>()?;
    counter.pages.fetch_add(1, Ordering::SeqCst);
    let _ = rows.iter().map(|r| r.id).sum::<i64>();
    Ok(())
}

#[ledger(name = "lite.payments", tenant = per_tenant, book = driver)]
pub struct LitePayment;

async fn setup(dir: &TempDir) -> (Jobs, Worker, Arc<Counter>, Arc<SqliteDriver>) {
    let driver = Arc::new(driver_in(dir).await);
    let jobs = Jobs::with_clock(driver.clone(), Arc::new(TestClock::new()));
    let counter = Arc::new(Counter::default());
    let worker = jobs.worker().context(counter.clone()).build().unwrap();
    (jobs, worker, counter, driver)
}

async fn run_until_idle(worker: &Worker) {
    for _ in 0..1_000 {
        if worker.tick().await.unwrap().is_empty() {
            return;
        }
    }
    panic!("the queue did not go idle");
}

#[tokio::test]
async fn the_ledger_of_passes_records_passes_and_blocks_a_completed_one_unless_forced() {
    let dir = TempDir::new("sqlite_backfill_ledger");
    let (jobs, worker, counter, driver) = setup(&dir).await;
    let first = TouchIds::enqueue(&jobs).await.unwrap();
    run_until_idle(&worker).await;
    assert_eq!(
        jobs.job(first.id).await.unwrap().unwrap().state,
        JobState::Done
    );
    assert_eq!(counter.pages.load(Ordering::SeqCst), 3);
    let passes = jobs
        .backfills()
        .list(BackfillListParams {
            name: Some("lite.ids".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(passes.len(), 1);
    assert_eq!(passes[0].status, PassStatus::Completed);
    assert_eq!((passes[0].batches, passes[0].rows), (3, 250));
    assert_eq!(passes[0].last_cursor, Some(serde_json::json!(250)));
    assert_eq!(passes[0].run_id, first.run_id);

    // Completed: a second pass reports skipped and runs no page.
    let again = TouchIds::enqueue(&jobs).await.unwrap();
    run_until_idle(&worker).await;
    assert_eq!(
        jobs.job(again.id).await.unwrap().unwrap().state,
        JobState::Done
    );
    assert_eq!(counter.pages.load(Ordering::SeqCst), 3);
    let refused = jobs
        .backfills()
        .enqueue("lite.ids", BackfillRequest::new())
        .await
        .unwrap_err();
    assert!(refused.is(ErrorCode::BackfillApplied), "{refused}");

    // Forced: a new row, the pages again.
    let forced = jobs
        .backfills()
        .enqueue("lite.ids", BackfillRequest::new().forced())
        .await
        .unwrap();
    run_until_idle(&worker).await;
    assert_eq!(counter.pages.load(Ordering::SeqCst), 6);
    let passes = driver
        .backfill_store()
        .unwrap()
        .backfill_list(&BackfillListParams {
            status: Some(PassStatus::Completed),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(passes.len(), 2);
    assert_eq!(passes[0].run_id, forced.run_id);
    assert!(passes[0].forced);
}

fn payment(key: &str, tenant: &str, amount: i64) -> Posting {
    posting!(key, [
        "assets:cash" => (amount) EUR,
        "income:sales" => (-amount) EUR,
    ])
    .for_tenant(tenant)
}

#[tokio::test]
async fn the_book_posts_a_key_once_and_a_conflict_writes_nothing() {
    let dir = TempDir::new("sqlite_book");
    let (jobs, worker, _counter, driver) = setup(&dir).await;
    let first = LitePayment::enqueue(&jobs, payment("pay_1", "acme", 1_000))
        .await
        .unwrap();
    run_until_idle(&worker).await;
    assert_eq!(
        jobs.job(first.id).await.unwrap().unwrap().state,
        JobState::Done
    );
    assert_eq!(count(&driver, "x_ledger_lines").await, 2);

    // Again, after it finished: posted once. Another tenant's key is another posting.
    let again = LitePayment::enqueue(&jobs, payment("pay_1", "acme", 1_000))
        .await
        .unwrap();
    LitePayment::enqueue(&jobs, payment("pay_1", "globex", 5))
        .await
        .unwrap();
    run_until_idle(&worker).await;
    assert_eq!(
        jobs.job(again.id).await.unwrap().unwrap().state,
        JobState::Done
    );
    assert_eq!(count(&driver, "x_ledger_lines").await, 4);

    // The same key with other lines: terminal, nothing written.
    let conflict = LitePayment::enqueue(&jobs, payment("pay_1", "acme", 999))
        .await
        .unwrap();
    run_until_idle(&worker).await;
    let job = jobs.job(conflict.id).await.unwrap().unwrap();
    assert_eq!((job.state, job.attempt), (JobState::Dead, 1));
    assert_eq!(
        job.last_error_code.as_deref(),
        Some("X_LEDGER_POSTING_CONFLICT")
    );
    assert_eq!(count(&driver, "x_ledger_lines").await, 4);
    // A conflict with more lines than stored rolls back the extra ones too.
    let longer = posting!("pay_1", [
        "assets:cash" => 1_000 EUR,
        "income:sales" => -900 EUR,
        "income:fees" => -100 EUR,
    ])
    .for_tenant("acme");
    let longer = LitePayment::enqueue(&jobs, longer).await.unwrap();
    run_until_idle(&worker).await;
    let job = jobs.job(longer.id).await.unwrap().unwrap();
    assert_eq!(
        job.last_error_code.as_deref(),
        Some("X_LEDGER_POSTING_CONFLICT")
    );
    assert_eq!(
        count(&driver, "x_ledger_lines").await,
        4,
        "the third line was rolled back"
    );

    // The book on a pool of the app's own reads the same lines.
    let book = SqliteBook::new(driver.pool().clone());
    let stored = book
        .posting_lines(&PostingLinesParams {
            ledger: "lite.payments".into(),
            tenant: Some("acme".into()),
            key: "pay_1".into(),
        })
        .await
        .unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!((stored[0].minor, stored[1].minor), (1_000, -1_000));
    assert_eq!(stored[0].currency, "EUR");
    let write = |key: &str| PostingWrite {
        ledger: "lite.payments".into(),
        tenant: Some("acme".into()),
        key: key.into(),
        lines: stored.clone(),
        run_id: uuid::Uuid::now_v7(),
        now: at("2030-01-01T00:00:00Z"),
    };
    assert_eq!(
        book.posting_write(&write("pay_1")).await.unwrap(),
        PostingWritten::AlreadyPosted
    );
    assert_eq!(
        book.posting_write(&write("pay_2")).await.unwrap(),
        PostingWritten::Written
    );
    assert_eq!(count(&driver, "x_ledger_lines").await, 6);
}

/// The write-ahead log is cut back after a checkpoint resets it, on every connection the
/// driver opens: without the limit a busy queue's log kept its peak size (3-16x the database).
#[tokio::test]
async fn the_write_ahead_log_is_cut_back_to_its_limit() {
    let dir = TempDir::new("journal_size_limit");
    let driver = driver_in(&dir).await;
    let limit: i64 = sqlx::query_scalar("pragma journal_size_limit")
        .fetch_one(driver.pool())
        .await
        .unwrap();
    assert_eq!(limit, jobs::driver::sqlite::JOURNAL_SIZE_LIMIT as i64);
    let mode: String = sqlx::query_scalar("pragma journal_mode")
        .fetch_one(driver.pool())
        .await
        .unwrap();
    assert_eq!(mode, "wal");
}
