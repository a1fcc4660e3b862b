//! `#[backfill]` and `#[ledger]` on real Postgres: the `x_backfills` ledger of passes and the
//! `x_ledger_lines` book (migration 0005), and a backfill worker process SIGKILLed mid-pass
//! whose pass another process resumes on the page it stopped at.

use crate::support;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jobs::backfill::{BackfillRequest, PassStatus};
use jobs::clock::TestClock;
use jobs::driver::backfill_store::BackfillListParams;
use jobs::driver::{JobDriver, PostgresDriver};
use jobs::ledger::PostingLinesParams;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};
use jobs::Worker;
use support::pg;

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

#[backfill(name = "pg.ids", tenant = none, source = ids_after, batch = 100, rate = 50.0)]
async fn touch_ids(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    let counter = pass.context::<Counter>()?;
    counter.pages.fetch_add(1, Ordering::SeqCst);
    let _ = rows.iter().map(|r| r.id).sum::<i64>();
    Ok(())
}

#[ledger(name = "pg.payments", tenant = per_tenant, book = driver)]
pub struct PgPayment;

/// The same declaration the backfill worker process runs; only its name matters here.
async fn items_after(
    _pass: Pass,
    _after: Option<i64>,
    _limit: u32,
) -> Result<Page<Row, i64>, JobError> {
    unreachable!("the backfill worker process runs this backfill")
}

#[backfill(name = "items.label", tenant = none, source = items_after, batch = 100, rate = 20.0)]
async fn label_items(_pass: Pass, _rows: Vec<Row>) -> Result<(), JobError> {
    unreachable!("the backfill worker process runs this backfill")
}

async fn setup(test: &str) -> (Jobs, Worker, Arc<Counter>, Arc<PostgresDriver>) {
    let (pool, schema) = pg::schema(test).await;
    let driver = Arc::new(PostgresDriver::new(pool, &schema).unwrap());
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
async fn the_postgres_ledger_records_passes_and_blocks_a_completed_one_unless_forced() {
    let (jobs, worker, counter, driver) = setup("backfill_pg_ledger").await;
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
            name: Some("pg.ids".into()),
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
        .enqueue("pg.ids", BackfillRequest::new())
        .await
        .unwrap_err();
    assert!(refused.is(ErrorCode::BackfillApplied), "{refused}");

    // Forced: a new row, the pages again.
    let forced = jobs
        .backfills()
        .enqueue("pg.ids", BackfillRequest::new().forced())
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

    let report = jobs.backfills().pending().await.unwrap();
    assert!(!report.pending.iter().any(|n| n == "pg.ids"));
    assert!(report.pending.iter().any(|n| n == "items.label"));
    assert!(report.orphaned.is_empty());
}

fn payment(key: &str, tenant: &str, amount: i64) -> Posting {
    posting!(key, [
        "assets:cash" => (amount) EUR,
        "income:sales" => (-amount) EUR,
    ])
    .for_tenant(tenant)
}

async fn line_count(pool: &sqlx::PgPool, schema: &str) -> i64 {
    let sql = format!("select count(*) from {schema}.x_ledger_lines");
    sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_postgres_book_posts_a_key_once_and_a_conflict_writes_nothing() {
    let (jobs, worker, _counter, driver) = setup("ledger_pg_book").await;
    let (pool, schema) = (driver.pool().clone(), driver.schema().to_string());

    let first = PgPayment::enqueue(&jobs, payment("pay_1", "acme", 1_000))
        .await
        .unwrap();
    run_until_idle(&worker).await;
    assert_eq!(
        jobs.job(first.id).await.unwrap().unwrap().state,
        JobState::Done
    );
    assert_eq!(line_count(&pool, &schema).await, 2);

    // Again, after it finished: posted once.
    let again = PgPayment::enqueue(&jobs, payment("pay_1", "acme", 1_000))
        .await
        .unwrap();
    // The same key under another tenant is another posting.
    PgPayment::enqueue(&jobs, payment("pay_1", "globex", 5))
        .await
        .unwrap();
    run_until_idle(&worker).await;
    assert_eq!(
        jobs.job(again.id).await.unwrap().unwrap().state,
        JobState::Done
    );
    assert_eq!(line_count(&pool, &schema).await, 4);

    // The same key with other lines: terminal, nothing written.
    let conflict = PgPayment::enqueue(&jobs, payment("pay_1", "acme", 999))
        .await
        .unwrap();
    run_until_idle(&worker).await;
    let job = jobs.job(conflict.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Dead);
    assert_eq!(job.attempt, 1);
    assert_eq!(
        job.last_error_code.as_deref(),
        Some("X_LEDGER_POSTING_CONFLICT")
    );
    assert_eq!(line_count(&pool, &schema).await, 4);
    // A conflict with more lines than stored rolls back the extra ones too.
    let longer = posting!("pay_1", [
        "assets:cash" => 1_000 EUR,
        "income:sales" => -900 EUR,
        "income:fees" => -100 EUR,
    ])
    .for_tenant("acme");
    let longer = PgPayment::enqueue(&jobs, longer).await.unwrap();
    run_until_idle(&worker).await;
    let job = jobs.job(longer.id).await.unwrap().unwrap();
    assert_eq!(
        job.last_error_code.as_deref(),
        Some("X_LEDGER_POSTING_CONFLICT")
    );
    assert_eq!(
        line_count(&pool, &schema).await,
        4,
        "the third line was rolled back"
    );

    // Unbalanced through a raw enqueue: refused by the run before a line is written.
    let lopsided = Posting::new(
        "pay_2",
        vec![
            PostingEntry::new("assets:cash", Money::new(10, "EUR")),
            PostingEntry::new("income:sales", Money::new(-9, "EUR")),
        ],
    )
    .for_tenant("acme");
    let raw = jobs.enqueue::<PgPayment>(lopsided).await.unwrap();
    run_until_idle(&worker).await;
    let job = jobs.job(raw.id).await.unwrap().unwrap();
    assert_eq!(job.last_error_code.as_deref(), Some("X_LEDGER_UNBALANCED"));
    assert_eq!(line_count(&pool, &schema).await, 4);

    let stored = driver
        .ledger_book()
        .unwrap()
        .posting_lines(&PostingLinesParams {
            ledger: "pg.payments".into(),
            tenant: Some("acme".into()),
            key: "pay_1".into(),
        })
        .await
        .unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!((stored[0].minor, stored[1].minor), (1_000, -1_000));
    assert_eq!(stored[0].currency, "EUR");
}

fn start_worker(schema: &str) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_backfill-worker"))
        .env("DATABASE_URL", pg::database_url())
        .env("JOBS_SCHEMA", schema)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the backfill worker starts");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("piped stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
        .expect("the backfill worker reports");
    assert_eq!(line.trim(), "ready");
    child
}

async fn scalar(pool: &sqlx::PgPool, sql: String) -> i64 {
    sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(pool)
        .await
        .unwrap()
}

async fn wait_until<F, Fut>(bound: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + bound;
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_pass_resumes_on_the_page_it_stopped_at_in_another_process() {
    let (pool, schema) = pg::schema("backfill_pg_kill").await;
    for ddl in [
        format!("create table {schema}.items (id bigint primary key, label text)"),
        format!("insert into {schema}.items (id) select g from generate_series(1, 2000) g"),
        format!("create table {schema}.page_runs (page bigint not null, pid int not null)"),
    ] {
        sqlx::query(AssertSqlSafe(ddl))
            .execute(&pool)
            .await
            .unwrap();
    }
    let jobs = Jobs::new(PostgresDriver::new(pool.clone(), &schema).unwrap());
    let queued = LabelItems::enqueue(&jobs).await.unwrap();

    // 20 pages of 100 at 20 pages/s: about a second. Kill it a third of the way in.
    let mut first = start_worker(&schema);
    wait_until(Duration::from_secs(30), "seven pages", || {
        scalar(
            &pool,
            format!("select count(distinct page) from {schema}.page_runs"),
        )
        .map_ge(7)
    })
    .await;
    first.kill().expect("SIGKILL the first worker");
    first.wait().expect("reap it");
    let checkpointed = jobs
        .backfills()
        .list(BackfillListParams::default())
        .await
        .unwrap()[0]
        .batches;
    assert!(checkpointed < 20, "killed mid-pass");

    let mut second = start_worker(&schema);
    wait_until(Duration::from_secs(60), "the pass to finish", || async {
        jobs.job(queued.id).await.unwrap().unwrap().state == JobState::Done
    })
    .await;
    second.kill().expect("stop the second worker");
    second.wait().expect("reap it");

    let labelled = scalar(
        &pool,
        format!("select count(*) from {schema}.items where label is not null"),
    )
    .await;
    assert_eq!(labelled, 2_000);
    let pass = &jobs
        .backfills()
        .list(BackfillListParams::default())
        .await
        .unwrap()[0];
    assert_eq!(pass.status, PassStatus::Completed);
    assert_eq!(
        (pass.batches, pass.rows),
        (21, 2_000),
        "20 full pages, then the empty one"
    );
    // Every checkpointed page ran once; at most the page in flight at the kill ran twice.
    let runs = scalar(&pool, format!("select count(*) from {schema}.page_runs")).await;
    assert!(runs <= 21, "{runs} page runs for 20 pages");
    let rerun = scalar(
        &pool,
        format!("select count(*) from (select page from {schema}.page_runs group by page having count(*) > 1) r"),
    )
    .await;
    assert!(rerun <= 1, "{rerun} pages ran twice");
    let before_kill = scalar(
        &pool,
        format!(
            "select count(*) from {schema}.page_runs where page < {checkpointed} \
             and pid <> (select pid from {schema}.page_runs where page = 0)"
        ),
    )
    .await;
    assert_eq!(
        before_kill, 0,
        "no checkpointed page ran in the second process"
    );
    let job = jobs.job(queued.id).await.unwrap().unwrap();
    assert_eq!(
        job.attempt, 2,
        "the killed attempt counts, the second resumed it"
    );
    println!(
        "backfill kill test: {checkpointed} pages checkpointed before SIGKILL, resumed on page {checkpointed}, {runs} page runs for 20 pages"
    );
}

trait MapGe {
    async fn map_ge(self, n: i64) -> bool;
}

impl<F: std::future::Future<Output = i64>> MapGe for F {
    async fn map_ge(self, n: i64) -> bool {
        self.await >= n
    }
}
