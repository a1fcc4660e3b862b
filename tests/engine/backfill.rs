//! `#[backfill]` on the memory driver and a test clock: pages as durable steps, pacing on the
//! run's clock, resume after a failed page, cancellation, the ledger of passes, forced re-runs,
//! per-tenant passes, the pending/orphaned report and the by-name enqueue's refusals. Nothing
//! here sleeps on the wall clock.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobs::backfill::{BackfillRequest, PassStatus};
use jobs::clock::Clock;
use jobs::driver::backfill_store::{BackfillBeginParams, BackfillListParams};
use jobs::driver::JobDriver;
use jobs::prelude::*;
use jobs::testing::TestKit;

/// The app's table and its instruments, handed to the worker as its context.
#[derive(Default)]
struct Table {
    /// id -> display name (None until the backfill fills it).
    rows: Mutex<BTreeMap<i64, Option<String>>>,
    /// Per tenant, for the per-tenant backfill.
    tenants: Mutex<BTreeMap<String, Vec<i64>>>,
    reads: AtomicU32,
    pages: AtomicU32,
    /// Fail the handler once on this page.
    fail_once_on: Mutex<Option<u64>>,
    /// Cancel the run's job from inside the handler on this page.
    cancel_on: Mutex<Option<u64>>,
    jobs: Mutex<Option<Jobs>>,
    /// The skipping handler leaves even ids unfilled (a pass that cannot drain its count).
    skip_even: std::sync::atomic::AtomicBool,
    /// The count answers below zero.
    negative_count: std::sync::atomic::AtomicBool,
}

impl Table {
    fn with_rows(n: i64) -> Arc<Table> {
        let table = Table::default();
        table
            .rows
            .lock()
            .unwrap()
            .extend((1..=n).map(|id| (id, None)));
        Arc::new(table)
    }

    fn filled(&self) -> usize {
        self.rows
            .lock()
            .unwrap()
            .values()
            .filter(|v| v.is_some())
            .count()
    }
}

#[derive(Debug, Clone)]
struct Row {
    id: i64,
}

/// Keyset: rows after `after`, in id order, `limit` at most.
async fn rows_after(
    pass: Pass,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<Row, i64>, JobError> {
    let table = pass.context::<Table>()?;
    table.reads.fetch_add(1, Ordering::SeqCst);
    let rows: Vec<Row> = table
        .rows
        .lock()
        .unwrap()
        .range(after.unwrap_or(0) + 1..)
        .take(limit as usize)
        .map(|(id, _)| Row { id: *id })
        .collect();
    Ok(Page::keyed(rows, |row| row.id))
}

async fn fill(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    let table = pass.context::<Table>()?;
    table.pages.fetch_add(1, Ordering::SeqCst);
    if *table.fail_once_on.lock().unwrap() == Some(pass.page()) {
        *table.fail_once_on.lock().unwrap() = None;
        return Err(JobError::retryable("the database blinked"));
    }
    if *table.cancel_on.lock().unwrap() == Some(pass.page()) {
        let jobs = table
            .jobs
            .lock()
            .unwrap()
            .clone()
            .expect("jobs in the table");
        jobs.cancel(pass.job_id()).await?;
    }
    let mut stored = table.rows.lock().unwrap();
    for row in rows {
        stored.insert(row.id, Some(format!("user-{}", row.id)));
    }
    Ok(())
}

#[backfill(name = "test.display-names", tenant = none, source = rows_after)]
async fn fill_display_names(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    fill(pass, rows).await
}

#[backfill(name = "test.paced", tenant = none, source = rows_after, batch = 10, rate = 5.0)]
async fn fill_paced(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    fill(pass, rows).await
}

#[backfill(name = "test.slow", tenant = none, source = rows_after, batch = 10, rate = 0.25,
           retry(attempts = 1))]
async fn fill_slowly(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    fill(pass, rows).await
}

async fn tenant_rows(
    pass: Pass,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<Row, i64>, JobError> {
    let table = pass.context::<Table>()?;
    let tenant = pass
        .tenant()
        .expect("a per-tenant pass has its tenant")
        .to_string();
    let ids = table
        .tenants
        .lock()
        .unwrap()
        .get(&tenant)
        .cloned()
        .unwrap_or_default();
    let rows: Vec<Row> = ids
        .into_iter()
        .filter(|id| *id > after.unwrap_or(0))
        .take(limit as usize)
        .map(|id| Row { id })
        .collect();
    Ok(Page::keyed(rows, |row| row.id))
}

/// The rows still without a display name: the source's predicate, counted.
async fn rows_left(pass: Pass) -> Result<i64, JobError> {
    let table = pass.context::<Table>()?;
    if table.negative_count.load(Ordering::SeqCst) {
        return Ok(-1);
    }
    let total = table.rows.lock().unwrap().len() as i64;
    Ok(total - table.filled() as i64)
}

#[backfill(name = "test.staging-only", tenant = none, source = rows_after, batch = 10,
           environments = ["staging", "preview"])]
async fn fill_in_staging(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    fill(pass, rows).await
}

#[backfill(name = "test.after-migration", tenant = none, source = rows_after, batch = 10,
           requires = "20261201093000_add_display_name")]
async fn fill_after_migration(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    fill(pass, rows).await
}

#[backfill(name = "test.counted", tenant = none, source = rows_after, batch = 10,
           count = rows_left)]
async fn fill_counted(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    let table = pass.context::<Table>()?;
    let keep: Vec<Row> = if table.skip_even.load(Ordering::SeqCst) {
        rows.into_iter().filter(|r| r.id % 2 == 1).collect()
    } else {
        rows
    };
    fill(pass, keep).await
}

#[backfill(name = "test.per-tenant", tenant = per_tenant, source = tenant_rows, batch = 2)]
async fn fill_per_tenant(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    fill(pass, rows).await
}

fn kit(table: &Arc<Table>) -> TestKit {
    let kit = TestKit::with_worker(|w| w.context(table.clone()));
    *table.jobs.lock().unwrap() = Some(kit.jobs().clone());
    kit
}

async fn passes(kit: &TestKit, name: &str) -> Vec<jobs::backfill::BackfillPass> {
    kit.jobs()
        .backfills()
        .list(BackfillListParams {
            name: Some(name.to_string()),
            ..Default::default()
        })
        .await
        .expect("the memory driver keeps a ledger")
}

#[tokio::test]
async fn pages_run_as_durable_steps_and_the_ledger_records_the_pass() {
    let table = Table::with_rows(2_500);
    let kit = kit(&table);
    let queued = FillDisplayNames::enqueue(kit.jobs()).await.unwrap();
    kit.run_to_completion().await;

    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    assert_eq!(table.filled(), 2_500);
    // 1,000 + 1,000 + 500: the short page ends the pass.
    assert_eq!(table.pages.load(Ordering::SeqCst), 3);
    let steps = kit.steps(queued.run_id).await;
    let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["batch:0", "batch:1", "batch:2"]);
    // A checkpoint holds a cursor and counts, never the rows.
    let last = steps[2].output.clone().unwrap();
    assert_eq!(
        last,
        serde_json::json!({ "cursor": 2_500, "batches": 3, "rows": 2_500, "done": true })
    );

    let ledger = passes(&kit, "test.display-names").await;
    assert_eq!(ledger.len(), 1);
    let pass = &ledger[0];
    assert_eq!(pass.status, PassStatus::Completed);
    assert_eq!((pass.batches, pass.rows), (3, 2_500));
    assert_eq!(pass.last_cursor, Some(serde_json::json!(2_500)));
    assert_eq!(pass.run_id, queued.run_id);
    assert!(pass.checksum.starts_with("fnv1a64:"));
    assert!(pass.finished_at.is_some());
    assert_eq!(pass.tenant, None);
}

#[tokio::test]
async fn the_pacer_spends_the_run_clock_instead_of_sleeping() {
    let table = Table::with_rows(100);
    let kit = kit(&table);
    let start = kit.clock().now();
    let wall = std::time::Instant::now();
    let queued = FillPaced::enqueue(kit.jobs()).await.unwrap();
    kit.run_until_idle().await;

    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    // 100 rows in pages of 10: ten full pages, then an empty one ends the pass. The first
    // page goes at once; the other ten each wait 1/5 s on the test clock.
    assert_eq!(table.reads.load(Ordering::SeqCst), 11);
    assert_eq!((kit.clock().now() - start).num_milliseconds(), 2_000);
    assert!(
        wall.elapsed() < Duration::from_secs(5),
        "no wall-clock sleep"
    );
    assert_eq!(FillPaced::backfill().rate, 5.0);
    assert_eq!(FillPaced::backfill().batch, 10);
}

#[tokio::test]
async fn a_failed_page_resumes_on_that_page_without_replaying_the_ones_before() {
    let table = Table::with_rows(2_500);
    *table.fail_once_on.lock().unwrap() = Some(1);
    let kit = kit(&table);
    let queued = FillDisplayNames::enqueue(kit.jobs()).await.unwrap();
    kit.run_to_completion().await;

    let job = kit.job(queued.id).await;
    assert_eq!(job.state, JobState::Done);
    assert_eq!(
        job.attempt, 2,
        "page 1 failed once, the retry finished the pass"
    );
    assert_eq!(
        kit.step_runs(queued.run_id, "batch:0"),
        1,
        "page 0 replayed from its checkpoint"
    );
    assert_eq!(kit.step_runs(queued.run_id, "batch:1"), 2);
    assert_eq!(kit.step_runs(queued.run_id, "batch:2"), 1);
    // Page 0 was read once; page 1 twice (its first handler failed); page 2 once.
    assert_eq!(table.reads.load(Ordering::SeqCst), 4);
    assert_eq!(table.filled(), 2_500);

    let ledger = passes(&kit, "test.display-names").await;
    assert_eq!(ledger.len(), 1, "the retry adopted its own row");
    assert_eq!(ledger[0].status, PassStatus::Completed);
    assert_eq!(
        ledger[0].rows, 2_500,
        "the replayed page was not counted twice"
    );
}

#[tokio::test]
async fn cancelling_the_pass_unwinds_it_at_the_next_page() {
    let table = Table::with_rows(100);
    *table.cancel_on.lock().unwrap() = Some(2);
    let kit = kit(&table);
    let queued = FillSlowly::enqueue(kit.jobs()).await.unwrap();
    kit.run_until_idle().await;

    let job = kit.job(queued.id).await;
    assert_eq!(job.state, JobState::Cancelled);
    // Page 2 cancelled its own job mid-page: the handler finished its writes (a page runs at
    // least once), but the cancelled run could no longer checkpoint it, and the pass read no
    // further page.
    assert_eq!(table.pages.load(Ordering::SeqCst), 3);
    assert_eq!(table.reads.load(Ordering::SeqCst), 3);
    assert_eq!(table.filled(), 30);
    let ledger = passes(&kit, "test.slow").await;
    assert_eq!(ledger[0].batches, 2, "page 2's checkpoint was refused");
    assert_ne!(ledger[0].status, PassStatus::Completed);
}

#[tokio::test]
async fn a_completed_pass_is_not_run_again_unless_forced() {
    let table = Table::with_rows(50);
    let kit = kit(&table);
    let first = FillDisplayNames::enqueue(kit.jobs()).await.unwrap();
    kit.run_to_completion().await;
    assert_eq!(table.pages.load(Ordering::SeqCst), 1);

    // The same name, enqueued again: a real job that reports skipped and touches nothing.
    let again = FillDisplayNames::enqueue(kit.jobs()).await.unwrap();
    assert!(!again.deduped, "the first pass is no longer live");
    kit.run_to_completion().await;
    assert_eq!(kit.job(again.id).await.state, JobState::Done);
    assert_eq!(
        table.pages.load(Ordering::SeqCst),
        1,
        "a completed pass is not re-run"
    );
    assert_eq!(passes(&kit, "test.display-names").await.len(), 1);

    // Forced: a new ledger row, and the pages run again.
    let forced = FillDisplayNames::force(kit.jobs()).await.unwrap();
    kit.run_to_completion().await;
    assert_eq!(kit.job(forced.id).await.state, JobState::Done);
    assert_eq!(table.pages.load(Ordering::SeqCst), 2);
    let ledger = passes(&kit, "test.display-names").await;
    assert_eq!(ledger.len(), 2);
    assert_eq!(ledger[0].run_id, forced.run_id, "newest first");
    assert!(ledger[0].forced && !ledger[1].forced);
    assert_eq!(ledger[1].run_id, first.run_id);
}

#[tokio::test]
async fn per_tenant_passes_are_scoped_and_recorded_per_tenant() {
    let table = Table::with_rows(10);
    table
        .tenants
        .lock()
        .unwrap()
        .insert("acme".into(), vec![1, 2, 3]);
    table
        .tenants
        .lock()
        .unwrap()
        .insert("globex".into(), vec![7, 8]);
    let kit = kit(&table);
    FillPerTenant::enqueue_for(kit.jobs(), "acme")
        .await
        .unwrap();
    kit.run_to_completion().await;
    FillPerTenant::enqueue_for(kit.jobs(), "globex")
        .await
        .unwrap();
    kit.run_to_completion().await;

    let filled: Vec<i64> = table
        .rows
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, v)| v.is_some())
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(filled, [1, 2, 3, 7, 8]);
    let ledger = passes(&kit, "test.per-tenant").await;
    let mut tenants: Vec<_> = ledger.iter().map(|p| p.tenant.clone().unwrap()).collect();
    tenants.sort();
    assert_eq!(tenants, ["acme", "globex"]);
    assert!(ledger.iter().all(|p| p.status == PassStatus::Completed));

    // A per-tenant pass without its tenant is refused by the run, for good.
    let raw = kit
        .jobs()
        .enqueue::<FillPerTenant>(BackfillRequest::new())
        .await
        .unwrap();
    kit.run_to_completion().await;
    let job = kit.job(raw.id).await;
    assert_eq!(job.state, JobState::Dead);
    assert_eq!(
        job.last_error_code.as_deref(),
        Some("X_JOB_TENANT_REQUIRED")
    );
}

#[tokio::test]
async fn the_pending_report_compares_declarations_with_the_ledger() {
    let table = Table::with_rows(5);
    let kit = kit(&table);
    let report = kit.jobs().backfills().pending().await.unwrap();
    for name in [
        "test.display-names",
        "test.paced",
        "test.per-tenant",
        "test.slow",
    ] {
        assert!(
            report.pending.iter().any(|p| p == name),
            "{name} pending: {report:?}"
        );
    }
    assert!(report.orphaned.is_empty());
    assert!(report.check().unwrap_err().is(ErrorCode::BackfillPending));

    FillPaced::enqueue(kit.jobs()).await.unwrap();
    kit.run_to_completion().await;
    // A pass under a name no declaration carries any more.
    kit.driver()
        .backfill_store()
        .unwrap()
        .backfill_begin(&BackfillBeginParams {
            id: uuid::Uuid::now_v7(),
            name: "test.removed-long-ago".into(),
            tenant: None,
            run_id: uuid::Uuid::now_v7(),
            job_id: uuid::Uuid::now_v7(),
            checksum: "fnv1a64:0".into(),
            force: false,
            now: kit.clock().now(),
        })
        .await
        .unwrap();

    let report = kit.jobs().backfills().pending().await.unwrap();
    assert!(!report.pending.iter().any(|p| p == "test.paced"));
    let paced = report.rows.iter().find(|r| r.name == "test.paced").unwrap();
    assert_eq!(paced.state, jobs::backfill::BackfillState::Completed);
    assert_eq!(report.orphaned, ["test.removed-long-ago"]);
}

#[tokio::test]
async fn the_by_name_enqueue_refuses_unknown_running_and_applied_passes() {
    let table = Table::with_rows(5);
    let kit = kit(&table);
    let jobs = kit.jobs();
    let unknown = jobs
        .backfills()
        .enqueue("test.nope", BackfillRequest::new())
        .await
        .unwrap_err();
    assert!(unknown.is(ErrorCode::BackfillUnknown), "{unknown}");

    let first = jobs
        .backfills()
        .enqueue("test.display-names", BackfillRequest::new())
        .await
        .unwrap();
    let running = jobs
        .backfills()
        .enqueue("test.display-names", BackfillRequest::new())
        .await
        .unwrap_err();
    assert!(running.is(ErrorCode::BackfillRunning), "{running}");
    assert!(running.message().contains(&first.id.to_string()));

    kit.run_to_completion().await;
    let applied = jobs
        .backfills()
        .enqueue("test.display-names", BackfillRequest::new())
        .await
        .unwrap_err();
    assert!(applied.is(ErrorCode::BackfillApplied), "{applied}");
    jobs.backfills()
        .enqueue("test.display-names", BackfillRequest::new().forced())
        .await
        .expect("forced past the completed pass");
}

#[test]
fn the_manifest_shows_backfills_with_their_kind_and_fields() {
    let manifest = jobs::manifest().unwrap();
    let row = manifest
        .jobs()
        .iter()
        .find(|j| j["name"] == "test.paced")
        .expect("the backfill is a job in the manifest");
    assert_eq!(row["kind"], "backfill");
    assert_eq!(row["backfill"]["batch"], 10);
    assert_eq!(row["backfill"]["rate"], 5.0);
    assert_eq!(row["backfill"]["tenant"], "none");
    assert_eq!(row["backfill"]["source"], "rows_after");
    assert_eq!(row["backfill"]["row"], "Row");
    assert_eq!(row["input"]["type"], "BackfillRequest");
    let tenant = manifest
        .jobs()
        .iter()
        .find(|j| j["name"] == "test.per-tenant")
        .unwrap();
    assert_eq!(tenant["tenant"]["mode"], "field");
    assert_eq!(tenant["backfill"]["tenant"], "per_tenant");
}

#[tokio::test]
async fn an_operator_cancel_between_pages_stops_the_pass() {
    let table = Table::with_rows(100);
    let kit = kit(&table);
    let queued = FillSlowly::enqueue(kit.jobs()).await.unwrap();
    // An operator cancels once page 0 ran; the heartbeat the next wait wakes sees it.
    *table.cancel_on.lock().unwrap() = None;
    let worker = kit.worker().clone();
    let run = tokio::spawn(async move { worker.tick().await });
    while table.pages.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    kit.jobs().cancel(queued.id).await.unwrap();
    run.await.unwrap().unwrap();
    assert_eq!(kit.job(queued.id).await.state, JobState::Cancelled);
    assert!(
        table.pages.load(Ordering::SeqCst) < 10,
        "the pass stopped early"
    );
}

#[tokio::test]
async fn a_pass_runs_only_in_its_declared_environments() {
    // Not in the declared environments: refused in the pass, nothing recorded, and the
    // pending report shows it excluded, not pending.
    let table = Table::with_rows(25);
    let kit = TestKit::in_environment("production", |w| w.context(table.clone()));
    assert_eq!(kit.jobs().environment().as_deref(), Some("production"));
    let queued = FillInStaging::enqueue(kit.jobs()).await.unwrap();
    kit.run_to_completion().await;
    let job = kit.job(queued.id).await;
    assert_eq!(job.state, JobState::Dead);
    assert_eq!(
        job.last_error_code.as_deref(),
        Some("X_BACKFILL_ENVIRONMENT")
    );
    assert_eq!(table.filled(), 0);
    assert!(passes(&kit, "test.staging-only").await.is_empty());
    let gate = kit
        .jobs()
        .backfills()
        .enqueue("test.staging-only", BackfillRequest::new())
        .await
        .unwrap_err();
    assert!(gate.is(ErrorCode::BackfillEnvironment), "{gate}");
    assert!(gate.message().contains("`production`"), "{gate}");
    let report = kit.jobs().backfills().pending().await.unwrap();
    assert_eq!(report.environment.as_deref(), Some("production"));
    let row = report
        .rows
        .iter()
        .find(|r| r.name == "test.staging-only")
        .unwrap();
    assert_eq!(row.state, jobs::backfill::BackfillState::Excluded);
    assert!(!report.pending.iter().any(|p| p == "test.staging-only"));

    // In one of them: the gate lets it through and the pass sweeps.
    let table = Table::with_rows(25);
    let kit = TestKit::in_environment("preview", |w| w.context(table.clone()));
    let queued = kit
        .jobs()
        .backfills()
        .enqueue("test.staging-only", BackfillRequest::new())
        .await
        .unwrap();
    kit.run_to_completion().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    assert_eq!(table.filled(), 25);

    // No environment named: a declaration that names some runs in none of them.
    let table = Table::with_rows(5);
    let kit = kit_without_environment(&table);
    let refused = kit
        .jobs()
        .backfills()
        .gate("test.staging-only", &BackfillRequest::new())
        .await
        .unwrap_err();
    assert!(refused.is(ErrorCode::BackfillEnvironment), "{refused}");
    assert!(refused.message().contains("no environment"), "{refused}");
}

/// The plain kit, unless JOBS_ENVIRONMENT is set where the tests run (then the case above
/// names its own).
fn kit_without_environment(table: &Arc<Table>) -> TestKit {
    assert!(
        std::env::var(jobs::ENVIRONMENT_VAR).is_err(),
        "these tests expect JOBS_ENVIRONMENT unset"
    );
    kit(table)
}

#[tokio::test]
async fn the_gate_waits_for_the_migration_a_backfill_requires() {
    let table = Table::with_rows(15);
    let kit = kit(&table);
    let backfills = kit.jobs().backfills();
    let pending = backfills
        .enqueue("test.after-migration", BackfillRequest::new())
        .await
        .unwrap_err();
    assert!(pending.is(ErrorCode::BackfillMigrationPending), "{pending}");
    assert!(
        pending
            .message()
            .contains("20261201093000_add_display_name"),
        "{pending}"
    );
    assert!(pending.fix().unwrap_or_default().contains("20261201093000"));
    let queued: u64 = kit
        .jobs()
        .stats()
        .await
        .unwrap()
        .iter()
        .map(|q| q.ready)
        .sum();
    assert_eq!(queued, 0, "nothing enqueued");

    kit.driver().record_migration(20261201093000);
    let queued = backfills
        .enqueue("test.after-migration", BackfillRequest::new())
        .await
        .unwrap();
    kit.run_to_completion().await;
    assert_eq!(kit.job(queued.id).await.state, JobState::Done);
    assert_eq!(table.filled(), 15);
}

#[tokio::test]
async fn a_count_still_above_zero_after_the_last_page_stalls_the_pass() {
    // Drained: the count reads zero and the pass completes.
    let table = Table::with_rows(35);
    let drained = kit(&table);
    let queued = FillCounted::enqueue(drained.jobs()).await.unwrap();
    drained.run_to_completion().await;
    assert_eq!(drained.job(queued.id).await.state, JobState::Done);
    assert_eq!(
        passes(&drained, "test.counted").await[0].status,
        PassStatus::Completed
    );

    // A handler that leaves rows behind: every page ran, the count still finds 17.
    let table = Table::with_rows(35);
    table.skip_even.store(true, Ordering::SeqCst);
    let stalled = kit(&table);
    let queued = FillCounted::enqueue(stalled.jobs()).await.unwrap();
    stalled.run_to_completion().await;
    let job = stalled.job(queued.id).await;
    assert_eq!(job.state, JobState::Dead, "X_BACKFILL_STALLED is terminal");
    assert_eq!(job.last_error_code.as_deref(), Some("X_BACKFILL_STALLED"));
    assert!(job.last_error.unwrap_or_default().contains("17 row(s)"));
    let ledger = passes(&stalled, "test.counted").await;
    assert_eq!(ledger[0].status, PassStatus::Failed);
    assert_eq!((ledger[0].batches, ledger[0].rows), (4, 35));

    // A count below zero is the app's bug, not a stall.
    let table = Table::with_rows(5);
    table.negative_count.store(true, Ordering::SeqCst);
    let negative = kit(&table);
    let queued = FillCounted::enqueue(negative.jobs()).await.unwrap();
    negative.run_to_completion().await;
    let job = negative.job(queued.id).await;
    assert_eq!(job.last_error_code.as_deref(), Some("X_INVARIANT"));
}

#[test]
fn the_manifest_carries_the_rails() {
    let manifest = jobs::manifest().unwrap();
    let find = |name: &str| {
        manifest
            .jobs()
            .iter()
            .find(|j| j["name"] == name)
            .unwrap()
            .clone()
    };
    let staging = find("test.staging-only");
    assert_eq!(
        staging["backfill"]["environments"],
        serde_json::json!(["staging", "preview"])
    );
    assert_eq!(staging["backfill"]["requires"], serde_json::Value::Null);
    assert_eq!(staging["backfill"]["counts"], false);
    let migration = find("test.after-migration");
    assert_eq!(
        migration["backfill"]["requires"],
        "20261201093000_add_display_name"
    );
    assert_eq!(migration["backfill"]["environments"], serde_json::json!([]));
    assert_eq!(find("test.counted")["backfill"]["counts"], true);
}
