//! The `jobs` operator tool against a SQLite file (`--database-url sqlite://...`): the verbs
//! reach the same operator surface as on Postgres.

use crate::support;

use support::cli::jobs_cli_on;

use jobs::prelude::*;
use support::sqlite::TempDir;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Account {
    account_id: u64,
}

/// Always refused: dead-lettered on its first attempt.
#[job(name = "cli_sqlite.crm.sync", key = "crm:{account_id}", tenant = none, queue = "crm")]
async fn sync_crm(_run: Run, _input: Account) -> Result<(), JobError> {
    Err(JobError::terminal("crm answered 422: account archived"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_verbs_work_on_a_sqlite_url() {
    let dir = TempDir::new("cli_sqlite");
    let url = dir.url();
    let (code, out, err) = jobs_cli_on(&url, &["migrate"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("the sqlite store: applied 0001, "), "{out}");
    let (code, out, _) = jobs_cli_on(&url, &["migrate"]).await;
    assert_eq!(
        (code, out.as_str()),
        (0, "the sqlite store is up to date\n")
    );

    let jobs = Jobs::open(&url).await.expect("open");
    let dead = SyncCrm::enqueue(&jobs, Account { account_id: 3 })
        .await
        .expect("enqueue");
    let worker = jobs.worker().queues(["crm"]).build().expect("worker");
    assert_eq!(worker.tick().await.expect("tick").len(), 1);

    let (code, out, _) = jobs_cli_on(&url, &["ls", "--state", "dead", "--json"]).await;
    assert_eq!(code, 0, "{out}");
    let page: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(page["jobs"][0]["id"], dead.id.to_string());

    let (code, out, _) = jobs_cli_on(&url, &["show", &dead.id.to_string()]).await;
    assert_eq!(code, 0);
    assert!(out.contains("state        dead"), "{out}");

    let (code, out, err) = jobs_cli_on(&url, &["retry", &dead.id.to_string()]).await;
    assert_eq!(code, 0, "{out}{err}");
    let row = jobs.job(dead.id).await.expect("read").expect("row");
    assert_eq!(row.state, JobState::Ready);
    let (code, out, _) = jobs_cli_on(&url, &["show", &dead.id.to_string()]).await;
    assert_eq!(code, 0);
    let history = &out[out.find("\nhistory\n").expect("a history table")..];
    assert!(
        history.contains("cli:") && history.contains("requeue"),
        "who retried it: {history}"
    );

    let (code, _, _) = jobs_cli_on(&url, &["pause", "crm"]).await;
    assert_eq!(code, 0);
    assert!(
        worker.tick().await.expect("tick").is_empty(),
        "a paused queue yields nothing"
    );
    let (code, _, _) = jobs_cli_on(&url, &["resume", "crm"]).await;
    assert_eq!(code, 0);
    assert_eq!(worker.tick().await.expect("tick").len(), 1);

    // Refusals exit 1 and print the code, as on Postgres.
    let (code, _, err) = jobs_cli_on(&url, &["promote", &dead.id.to_string()]).await;
    assert_eq!(code, 1);
    assert!(err.starts_with("error: X_JOB_NOT_PROMOTABLE: "), "{err}");
}

/// `jobs workers` shows the queue limits each live worker announced, and warns of a queue
/// whose workers run with different ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_show_their_queue_limits_and_a_disagreement() {
    let dir = TempDir::new("cli_sqlite_workers");
    let url = dir.url();
    let (code, _, err) = jobs_cli_on(&url, &["migrate"]).await;
    assert_eq!(code, 0, "{err}");
    let jobs = Jobs::open(&url).await.expect("open");
    let minute = std::time::Duration::from_secs(60);
    let start = |id: &str, limits: jobs::QueueLimits| {
        jobs.worker()
            .id(id)
            .queues(["crm"])
            .queue_limits("crm", limits)
            .build()
            .expect("worker")
            .start()
    };
    let a = start(
        "worker-a",
        jobs::QueueLimits::new().concurrency(2).rate(10, minute),
    );
    let b = start("worker-b", jobs::QueueLimits::new().concurrency(3));
    support::wait::wait_until("both workers' registry rows", || {
        let jobs = jobs.clone();
        async move { jobs.operator().workers().await.unwrap().len() == 2 }
    })
    .await;
    let (code, out, err) = jobs_cli_on(&url, &["workers"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("crm: 2 in flight, 10 per 1m") && out.contains("crm: 3 in flight"),
        "{out}"
    );
    assert!(
        out.contains("warning: the workers of queue `crm` run with different limits"),
        "{out}"
    );
    assert!(
        out.contains("  2 in flight, 10 per 1m: worker-a\n")
            && out.contains("  3 in flight: worker-b\n"),
        "{out}"
    );
    b.shutdown().await;
    let (_, out, _) = jobs_cli_on(&url, &["workers"]).await;
    assert!(
        !out.contains("warning:"),
        "one worker left agrees with itself: {out}"
    );
    a.shutdown().await;
}

/// A verb on a file nobody migrated names the tool's own verb as the fix, not the driver's API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unmigrated_store_is_told_to_run_jobs_migrate() {
    let dir = TempDir::new("cli_sqlite_unmigrated");
    let (code, _, err) = jobs_cli_on(&dir.url(), &["ls"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("X_DRIVER_SCHEMA_MISSING"), "{err}");
    assert!(err.contains("fix: run `jobs migrate`"), "{err}");
    assert!(!err.contains("PostgresDriver::migrate"), "{err}");
}

/// At most 4 starts every 90 s per account.
#[job(
    name = "cli_sqlite.crm.push",
    key = "push:{account_id}",
    tenant = none,
    queue = "crm",
    rate(limit = 4, per = "90s", key = "{account_id}")
)]
async fn push_crm(_run: Run, _input: Account) -> Result<(), JobError> {
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_names_a_declared_rate() {
    let dir = TempDir::new("cli_sqlite_rate");
    let url = dir.url();
    let (code, _, err) = jobs_cli_on(&url, &["migrate"]).await;
    assert_eq!(code, 0, "{err}");
    let jobs = Jobs::open(&url).await.expect("open");
    let rated = PushCrm::enqueue(&jobs, Account { account_id: 5 })
        .await
        .expect("enqueue");
    let (code, out, _) = jobs_cli_on(&url, &["show", &rated.id.to_string()]).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("rate         at most 4 starts per 90s per key, fleet-wide\n"),
        "{out}"
    );
    let plain = SyncCrm::enqueue(&jobs, Account { account_id: 6 })
        .await
        .expect("enqueue");
    let (_, out, _) = jobs_cli_on(&url, &["show", &plain.id.to_string()]).await;
    assert!(!out.contains("\nrate "), "no rate declared: {out}");
}

/// Debounced by 10 s, discarded if not started within 2 h.
#[job(
    name = "cli_sqlite.crm.digest",
    key = "digest:{account_id}",
    tenant = none,
    queue = "crm",
    debounce = "10s",
    unique(for = "1d"),
    expires_in = "2h"
)]
async fn digest_crm(_run: Run, _input: Account) -> Result<(), JobError> {
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_names_a_declared_debounce_unique_period_and_expiry() {
    let dir = TempDir::new("cli_sqlite_debounce");
    let url = dir.url();
    let (code, _, err) = jobs_cli_on(&url, &["migrate"]).await;
    assert_eq!(code, 0, "{err}");
    let jobs = Jobs::open(&url).await.expect("open");
    let digest = DigestCrm::enqueue(&jobs, Account { account_id: 5 })
        .await
        .expect("enqueue");
    let (code, out, _) = jobs_cli_on(&url, &["show", &digest.id.to_string()]).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("debounce     10s: an enqueue of its key while queued pushes it back\n"),
        "{out}"
    );
    assert!(out.contains("\nexpires      "), "{out}");
    assert!(out.contains(" unless started: expires_in 2h\n"), "{out}");
    assert!(out.contains("\nunique       1d, until "), "{out}");
    assert!(
        out.contains("): holds its key until then, finished or not\n"),
        "{out}"
    );
}

/// What [`tally_crm`] keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Tally {
    orders: u64,
    note: String,
}

/// Keeps its result (`keep_result`).
#[job(
    name = "cli_sqlite.crm.tally",
    key = "tally:{account_id}",
    tenant = none,
    queue = "crm-tally",
    keep_result
)]
async fn tally_crm(_run: Run, input: Account) -> Result<Tally, JobError> {
    Ok(Tally {
        orders: input.account_id * 7,
        note: "secret-note".into(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_prints_a_kept_result_redacted_as_the_input_is() {
    let dir = TempDir::new("cli_sqlite_result");
    let url = dir.url();
    let (code, _, err) = jobs_cli_on(&url, &["migrate"]).await;
    assert_eq!(code, 0, "{err}");
    let jobs = Jobs::open(&url).await.expect("open");
    let tally = TallyCrm::enqueue(&jobs, Account { account_id: 6 })
        .await
        .expect("enqueue");
    let (_, out, _) = jobs_cli_on(&url, &["show", &tally.id.to_string()]).await;
    assert!(
        !out.contains("\nresult "),
        "nothing kept before it ran: {out}"
    );

    let worker = jobs.worker().queues(["crm-tally"]).build().expect("worker");
    assert_eq!(worker.tick().await.expect("tick").len(), 1);
    assert_eq!(
        TallyCrm::result(&jobs, tally.id).await.expect("read"),
        Some(Tally {
            orders: 42,
            note: "secret-note".into()
        })
    );

    let (code, out, _) = jobs_cli_on(&url, &["show", &tally.id.to_string()]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("state        done\n"), "{out}");
    let result = out
        .lines()
        .find_map(|line| line.strip_prefix("result       "))
        .unwrap_or_else(|| panic!("a result line: {out}"));
    assert!(
        result.contains("\"orders\":\"<number>\"") && result.contains("\"note\":\"<string>\""),
        "the result keeps its shape, its values redacted: {result}"
    );
    assert!(
        !out.contains("secret-note") && !result.contains("42"),
        "{out}"
    );

    let (code, out, _) = jobs_cli_on(&url, &["show", &tally.id.to_string(), "--json"]).await;
    assert_eq!(code, 0, "{out}");
    let shown: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        shown["job"]["result"],
        serde_json::json!({ "orders": "<number>", "note": "<string>" })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_names_dependencies_both_ways() {
    let dir = TempDir::new("cli_sqlite_dependencies");
    let url = dir.url();
    let (code, _, err) = jobs_cli_on(&url, &["migrate"]).await;
    assert_eq!(code, 0, "{err}");
    let jobs = Jobs::open(&url).await.expect("open");
    let first = SyncCrm::enqueue(&jobs, Account { account_id: 8 })
        .await
        .expect("enqueue");
    let after = jobs::EnqueueOptions::new().depends_on([first.id]);
    let then = PushCrm::enqueue_with(&jobs, Account { account_id: 8 }, after)
        .await
        .expect("enqueue");
    let (code, out, _) = jobs_cli_on(&url, &["show", &then.id.to_string()]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("state        suspended\n"), "{out}");
    assert!(
        out.contains("blocked      until the jobs it depends on have settled\n"),
        "{out}"
    );
    assert!(
        out.contains("on failure   cancel (of a dependency)\n"),
        "{out}"
    );
    assert!(
        out.contains(&format!("depends on   {} (ready)\n", first.id)),
        "{out}"
    );
    let (_, out, _) = jobs_cli_on(&url, &["show", &first.id.to_string()]).await;
    assert!(
        out.contains(&format!("dependent    {}\n", then.id)),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_names_parent_children_and_batch() {
    let dir = TempDir::new("cli_sqlite_groups");
    let url = dir.url();
    let (code, _, err) = jobs_cli_on(&url, &["migrate"]).await;
    assert_eq!(code, 0, "{err}");
    let jobs = Jobs::open(&url).await.expect("open");
    let parent = SyncCrm::enqueue(&jobs, Account { account_id: 20 })
        .await
        .expect("enqueue");
    let child = PushCrm::enqueue(&jobs, Account { account_id: 21 })
        .await
        .expect("enqueue");
    jobs.driver()
        .job_group_join(&jobs::driver::GroupJoinParams {
            group: uuid::Uuid::now_v7(),
            waiter: parent.id,
            parent: Some(parent.id),
            members: &[child.id],
            need: jobs::driver::GroupNeed::Count(1),
            now: jobs.now(),
        })
        .await
        .expect("join");
    let (code, out, _) = jobs_cli_on(&url, &["show", &parent.id.to_string()]).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("child        {} (ready)\n", child.id)),
        "{out}"
    );
    let (_, out, _) = jobs_cli_on(&url, &["show", &child.id.to_string()]).await;
    assert!(
        out.contains(&format!("parent       {}\n", parent.id)),
        "{out}"
    );

    let batch = jobs
        .batch::<SyncCrm>(Account { account_id: 22 })
        .await
        .expect("a batch");
    let members = batch
        .add::<PushCrm, _>([Account { account_id: 23 }])
        .await
        .expect("add");
    let (_, out, _) = jobs_cli_on(&url, &["show", &members[0].id.to_string()]).await;
    assert!(
        out.contains(&format!(
            "batch        member of {} (open: 0 of 1 settled, 0 done, 0 failed, 0 cancelled)\n",
            batch.id()
        )),
        "{out}"
    );
    batch.close().await.expect("close");
    let (_, out, _) = jobs_cli_on(&url, &["show", &batch.callback().to_string()]).await;
    assert!(
        out.contains(&format!(
            "batch        callback of {} (closed: 0 of 1",
            batch.id()
        )),
        "{out}"
    );
    let (code, out, _) = jobs_cli_on(&url, &["batch", &batch.id().to_string()]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("state        closed\n"), "{out}");
    assert!(
        out.contains("members      1 (0 settled: 0 done, 0 failed, 0 cancelled)\n"),
        "{out}"
    );
    assert!(out.contains("by state     ready 1\n"), "{out}");
    let missing = uuid::Uuid::now_v7().to_string();
    let (code, _, err) = jobs_cli_on(&url, &["batch", &missing]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("X_JOB_NOT_FOUND"), "{err}");
}
