//! The operator verbs of issue 43 on a SQLite store: `cancel --reason` (the reason in the job's
//! history), `show`'s remaining retry delays, `tasks show --count`, `errors explain`, and usage
//! errors answered as `X_CLI_BAD_FLAG` with their fix.

use crate::support;

use support::cli::jobs_cli_on;

use jobs::prelude::*;
use support::sqlite::TempDir;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Invoice {
    invoice_id: u64,
}

/// Retried three times, 10 s apart and doubling.
#[job(name = "cli_verbs.invoice.send", key = "invoice:{invoice_id}", tenant = none, queue = "billing", retry(attempts = 4, backoff = exponential, delay = "10s", jitter = none))]
async fn send_invoice(_run: Run, _input: Invoice) -> Result<(), JobError> {
    Ok(())
}

async fn store(name: &str) -> (TempDir, String, Jobs) {
    let dir = TempDir::new(name);
    let url = dir.url();
    let (code, _, err) = jobs_cli_on(&url, &["migrate"]).await;
    assert_eq!(code, 0, "{err}");
    let jobs = Jobs::open(&url).await.expect("open");
    (dir, url, jobs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_records_its_reason_in_the_history() {
    let (_dir, url, jobs) = store("cli_verbs_cancel").await;
    let queued = SendInvoice::enqueue(&jobs, Invoice { invoice_id: 1 })
        .await
        .expect("enqueue");
    let id = queued.id.to_string();

    // A reason that cannot be stored is refused before anything is written.
    let (code, _, err) = jobs_cli_on(&url, &["cancel", &id, "--reason", "two\nlines"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("error: X_VALUE_UNSTORABLE: "), "{err}");
    assert_eq!(
        jobs.job(queued.id).await.unwrap().unwrap().state,
        JobState::Ready
    );

    let (code, out, err) = jobs_cli_on(
        &url,
        &[
            "--actor",
            "ops:ana",
            "cancel",
            &id,
            "--reason",
            "customer asked (T-42)",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&format!("cancelled {id}")), "{out}");
    let (code, out, _) = jobs_cli_on(&url, &["show", &id, "--json"]).await;
    assert_eq!(code, 0);
    let detail: serde_json::Value = serde_json::from_str(&out).expect("json");
    let cancel = &detail["history"][0];
    assert_eq!(cancel["verb"], "cancel");
    assert_eq!(cancel["actor"], "ops:ana");
    assert_eq!(cancel["detail"], "customer asked (T-42)");
    let (_, out, _) = jobs_cli_on(&url, &["show", &id]).await;
    assert!(out.contains("customer asked (T-42)"), "{out}");
    // Cancelled: no retry is ahead any more.
    assert!(!out.contains("\nretries "), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_prints_the_remaining_retry_delays() {
    let (_dir, url, jobs) = store("cli_verbs_show").await;
    let queued = SendInvoice::enqueue(&jobs, Invoice { invoice_id: 2 })
        .await
        .expect("enqueue");
    let id = queued.id.to_string();
    let (code, out, err) = jobs_cli_on(&url, &["show", &id]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("retries      3 left, after 10s, 20s, 40s (exponential backoff)"),
        "{out}"
    );
    let (_, out, _) = jobs_cli_on(&url, &["show", &id, "--json"]).await;
    let detail: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        detail["remaining_retry_delays_ms"],
        serde_json::json!([10_000, 20_000, 40_000])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_show_lists_the_next_fires_in_the_task_s_zone() {
    // No database: the schedule is the declaration's (`dash_digest`, declared by the dashboard's
    // tests in this binary: 09:00 on weekdays, Paris).
    let (code, out, err) = jobs_cli_on("", &["tasks", "show", "dash_digest", "--count", "3"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("at 09:00, Monday to Friday"), "{out}");
    assert!(out.contains("Europe/Paris"), "{out}");
    let fires: Vec<&str> = out
        .lines()
        .filter(|l| l.contains(" 09:00 CET") || l.contains(" 09:00 CEST"))
        .collect();
    assert_eq!(fires.len(), 3, "{out}");
    assert!(
        fires
            .iter()
            .all(|l| !l.starts_with("Sat") && !l.starts_with("Sun")),
        "{out}"
    );
    // The default is 5; JSON carries each fire in UTC and in the zone.
    let (code, out, _) = jobs_cli_on("", &["tasks", "show", "dash_digest", "--json"]).await;
    assert_eq!(code, 0);
    let shown: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(shown["next"].as_array().unwrap().len(), 5);
    assert_eq!(shown["cron_in_words"], "at 09:00, Monday to Friday");
    // An unknown task is a usage error naming the declared ones.
    let (code, _, err) = jobs_cli_on("", &["tasks", "show", "nope"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error: X_CLI_BAD_FLAG: "), "{err}");
    assert!(err.contains("dash_digest"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_explain_and_usage_errors_carry_a_code_and_a_fix() {
    let (code, out, err) = jobs_cli_on("", &["errors", "explain", "X_JOB_NOT_REQUEUEABLE"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("retry:   terminal"), "{out}");
    assert!(
        out.contains("fix:     only done, failed, dead or cancelled jobs can be requeued"),
        "{out}"
    );
    // A flag the verb does not take: the tool's code and the parser's near miss as the fix.
    let (code, _, err) = jobs_cli_on("", &["cancel", "--reasn", "x"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error: X_CLI_BAD_FLAG: "), "{err}");
    assert!(err.contains("  fix: "), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_runs_one_job_on_a_throwaway_store_and_prints_its_trace() {
    // No database: a memory store and a frozen clock of the run's own.
    let (code, out, err) = jobs_cli_on(
        "",
        &[
            "test",
            "cli_verbs.invoice.send",
            "--input",
            r#"{"invoice_id": 5}"#,
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("cli_verbs.invoice.send: done after 1 attempt(s) of 4"),
        "{out}"
    );
    assert!(
        out.contains("\nattempts\n") && out.contains("completed"),
        "{out}"
    );

    // A job that fails for good: the trace, then its refusal (exit 1).
    let (code, out, err) = jobs_cli_on(
        "",
        &[
            "test",
            "cli_sqlite.crm.sync",
            "--input",
            r#"{"account_id": 3}"#,
            "--json",
        ],
    )
    .await;
    assert_eq!(code, 1, "{err}");
    let trace: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(trace["state"], "dead");
    assert_eq!(trace["attempts"][0]["outcome"], "dead-lettered");
    assert!(
        !out.contains("\"account_id\": 3"),
        "no input in the trace: {out}"
    );

    // Input that is no JSON, or a job not declared: usage errors.
    let (code, _, err) =
        jobs_cli_on("", &["test", "cli_verbs.invoice.send", "--input", "{oops"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with("error: X_CLI_BAD_FLAG: --input is not JSON"),
        "{err}"
    );
    let (code, _, err) = jobs_cli_on("", &["test", "nope", "--input", "{}"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cli_verbs.invoice.send"), "{err}");
}

/// Runs once: a lapsed lease on its only attempt is buried by a drain.
#[job(name = "cli_verbs.receipt.once", key = "receipt:{invoice_id}", tenant = none, queue = "billing", retry(attempts = 1))]
async fn send_receipt_once(_run: Run, _input: Invoice) -> Result<(), JobError> {
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_buries_final_attempts_and_hands_back_the_other_lapsed_runs() {
    use jobs::driver::{ClaimParams, QueueDemand};
    let (_dir, url, jobs) = store("cli_verbs_drain").await;
    let claim = |worker: &str| ClaimParams {
        demand: vec![QueueDemand {
            queue: "billing".into(),
            limit: 10,
        }],
        worker_id: worker.into(),
        visibility_timeout: std::time::Duration::ZERO,
        drop_exhausted: Vec::new(),
        fair_after: String::new(),
        now: jobs.now(),
    };
    // One run held under a live lease: left alone.
    let live = SendInvoice::enqueue(&jobs, Invoice { invoice_id: 4 })
        .await
        .expect("enqueue");
    let mut held = claim("live-worker");
    held.visibility_timeout = std::time::Duration::from_secs(3600);
    assert_eq!(jobs.driver().job_claim(&held).await.unwrap().jobs.len(), 1);
    // A worker that died holding two: claimed with a lease that lapses at once (no sleep).
    let retried = SendInvoice::enqueue(&jobs, Invoice { invoice_id: 3 })
        .await
        .expect("enqueue");
    let once = SendReceiptOnce::enqueue(&jobs, Invoice { invoice_id: 3 })
        .await
        .expect("enqueue");
    let taken = jobs
        .driver()
        .job_claim(&claim("dead-worker"))
        .await
        .unwrap();
    assert_eq!(taken.jobs.len(), 2);

    let (code, out, err) = jobs_cli_on(&url, &["drain", "billing", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(report["buried"], serde_json::json!([once.id]));
    assert_eq!(report["requeued"], serde_json::json!([retried.id]));
    assert_eq!(report["running"], 1);
    let row = jobs.job(once.id).await.unwrap().unwrap();
    assert_eq!(row.state, JobState::Dead);
    assert_eq!(
        row.last_error.as_deref(),
        Some("LEASE_LAPSED_FINAL_ATTEMPT")
    );
    let row = jobs.job(retried.id).await.unwrap().unwrap();
    assert_eq!((row.state, row.attempt), (JobState::Ready, 1));
    assert_eq!(
        row.last_error.as_deref(),
        Some("LEASE_LAPSED: handed back by an operator's drain")
    );
    assert_eq!(
        jobs.job(live.id).await.unwrap().unwrap().state,
        JobState::Running
    );
    // Nothing left to drain; the text form says so.
    let (code, out, _) = jobs_cli_on(&url, &["drain", "billing"]).await;
    assert_eq!(code, 0);
    assert!(
        out.starts_with("drained `billing`: 0 lapsed run(s) back to ready, due now; 0 buried"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_checks_the_manifest_the_migrations_and_the_persistence() {
    // Not migrated yet: the migrations check fails with its code and fix, the rest still run.
    let dir = TempDir::new("cli_verbs_verify");
    let url = dir.url();
    let (code, out, err) = jobs_cli_on(&url, &["verify", "--json"]).await;
    assert_eq!(code, 1, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(report["ok"], false);
    let check = |name: &str| {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(check("migrations")["status"], "failed");
    assert_eq!(check("migrations")["code"], "X_DRIVER_SCHEMA_MISSING");
    assert!(check("migrations")["fix"]
        .as_str()
        .unwrap()
        .contains("jobs migrate"));
    assert_eq!(check("manifest")["status"], "skipped");
    assert_eq!(check("step names")["status"], "ok");

    // Migrated, with a fresh committed manifest: every check passes.
    let (code, _, err) = jobs_cli_on(&url, &["migrate"]).await;
    assert_eq!(code, 0, "{err}");
    let fresh = dir.path().join("manifest.json");
    std::fs::write(
        &fresh,
        jobs::codegen::manifest_json(&jobs::manifest().expect("jobs are linked")),
    )
    .unwrap();
    let fresh = fresh.to_str().unwrap().to_string();
    let (code, out, err) = jobs_cli_on(&url, &["verify", "--manifest", &fresh]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("migrations") && out.contains("every embedded migration is applied"),
        "{out}"
    );
    assert!(out.contains("journal_mode = wal"), "{out}");

    // A stale manifest: exit 1, the file named, the fix printed.
    let stale = dir.path().join("stale.json");
    std::fs::write(&stale, "{}\n").unwrap();
    let (code, out, err) =
        jobs_cli_on(&url, &["verify", "--manifest", stale.to_str().unwrap()]).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("manifest.json is stale"), "{out}");
    assert!(
        err.starts_with("error: X_INVARIANT: 1 check(s) failed"),
        "{err}"
    );
    assert!(err.contains("jobs manifest"), "{err}");
}
