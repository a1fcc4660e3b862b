//! The `jobs` command-line tool against a real Postgres schema: every verb through
//! `jobs::cli::run` (what the binary calls), its tables, its `--json`, its exit codes.
//!
//! Set `JOBS_CLI_DEMO_HOLD=<secs>` to keep the scenario's worker registered that long after
//! the verbs ran, and print the schema, so the operating guide's output can be captured from the real
//! binary: `cargo run -p jobs --features cli --bin jobs -- --schema <schema> workers`.

use crate::support;

use support::cli::jobs_cli;

use std::time::Duration;

use jobs::driver::PostgresDriver;
use jobs::prelude::*;

use crate::support::wait::wait_until;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Invoice {
    invoice_id: u64,
    email: String,
}

/// Renders and charges an invoice, reporting progress.
#[job(name = "billing.send_invoice", key = "invoice:{invoice_id}", tenant = none, queue = "billing")]
async fn send_invoice(run: Run, input: Invoice) -> Result<(), JobError> {
    run.step("render", async {
        Ok::<_, JobError>(format!("pdf-{}", input.invoice_id))
    })
    .await?;
    run.progress(1, 2, Some("rendered")).await?;
    run.step("charge", async { Ok::<_, JobError>(42) }).await?;
    run.progress(2, 2, Some("charged")).await?;
    Ok(())
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Account {
    account_id: u64,
}

/// Always refused by the CRM: dead-lettered on its first attempt.
#[job(name = "crm.sync", key = "crm:{account_id}", tenant = none, queue = "crm", retry(attempts = 2))]
async fn sync_crm(run: Run, _input: Account) -> Result<(), JobError> {
    run.step("push", async {
        Err::<(), _>(JobError::terminal("crm answered 422: account archived"))
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_against_a_real_queue() {
    let (pool, schema) = support::pg::schema("cli_every_verb").await;
    let jobs = Jobs::new(PostgresDriver::new(pool, &schema).unwrap());

    // migrate: the harness migrated already, so it is up to date.
    let (code, out, _) = jobs_cli(&schema, &["migrate"]).await;
    assert_eq!(code, 0);
    assert_eq!(out, format!("schema `{schema}` is up to date\n"));

    let paid = SendInvoice::enqueue_with(
        &jobs,
        Invoice {
            invoice_id: 7,
            email: "ana@example.com".into(),
        },
        EnqueueOptions::new().actor("user:42"),
    )
    .await
    .unwrap();
    let later = SendInvoice::enqueue_with(
        &jobs,
        Invoice {
            invoice_id: 8,
            email: "bo@example.com".into(),
        },
        EnqueueOptions::new().delay(Duration::from_secs(3600)),
    )
    .await
    .unwrap();
    let dead = SyncCrm::enqueue(&jobs, Account { account_id: 3 })
        .await
        .unwrap();
    let worker = jobs.worker().queues(["billing", "crm"]).build().unwrap();
    let ran = worker.tick().await.unwrap();
    assert_eq!(ran.len(), 2);

    // ls: queue depth and the page, newest first.
    let (code, out, _) = jobs_cli(&schema, &["ls"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("QUEUE "), "{out}");
    assert!(
        out.contains("billing.send_invoice") && out.contains("crm.sync"),
        "{out}"
    );
    assert!(
        out.contains(&dead.id.to_string()) && out.contains("dead"),
        "the dead letter shows: {out}"
    );
    let (code, out, _) = jobs_cli(&schema, &["ls", "--state", "dead", "--json"]).await;
    assert_eq!(code, 0);
    let page: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(page["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(page["jobs"][0]["id"], dead.id.to_string());

    // show: steps, progress, redacted input.
    let (code, out, _) = jobs_cli(&schema, &["show", &paid.id.to_string()]).await;
    assert_eq!(code, 0);
    assert!(out.contains("state        done"), "{out}");
    assert!(
        out.contains("actor        user:42"),
        "who asked shows: {out}"
    );
    assert!(out.contains("progress     2/2 — charged"), "{out}");
    assert!(out.contains("render") && out.contains("charge"), "{out}");
    assert!(
        !out.contains("ana@example.com"),
        "the input is redacted: {out}"
    );
    let (_, out, _) = jobs_cli(&schema, &["show", &paid.id.to_string(), "--json"]).await;
    let detail: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(detail["job"]["input"]["email"], "<string>");
    assert_eq!(detail["job"]["actor"], "user:42");
    // The MCP server's job.show carries it too.
    let mcp = jobs::mcp::JobsMcp::new(jobs::manifest().unwrap(), jobs.clone());
    let mut args = serde_json::Map::new();
    args.insert("id".into(), paid.id.to_string().into());
    let shown = mcp.call("job.show", &args).await.unwrap();
    assert_eq!(shown["job"]["actor"], "user:42");
    assert_eq!(detail["steps"].as_array().unwrap().len(), 2);

    // Refusals exit 1 and print the code.
    let (code, _, err) = jobs_cli(&schema, &["retry", &later.id.to_string()]).await;
    assert_eq!(code, 1);
    assert!(err.starts_with("error: X_JOB_NOT_REQUEUEABLE: "), "{err}");
    let (code, out, _) = jobs_cli(&schema, &["promote", &paid.id.to_string(), "--json"]).await;
    assert_eq!(code, 1);
    assert!(out.contains("\"code\": \"X_JOB_NOT_PROMOTABLE\""), "{out}");
    let unknown = uuid::Uuid::now_v7().to_string();
    let (code, _, err) = jobs_cli(&schema, &["rm", &unknown]).await;
    assert_eq!((code, err.contains("X_JOB_NOT_FOUND")), (1, true), "{err}");
    // Usage errors exit 2.
    let (code, _, err) = jobs_cli(&schema, &["show", "not-a-uuid"]).await;
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = jobs_cli(&schema, &["ls", "--state", "stuck"]).await;
    assert_eq!((code, err.contains("X_CLI_BAD_FLAG")), (2, true), "{err}");
    let (code, _, err) = jobs_cli(&schema, &["ls", "--limit", "500"]).await;
    assert_eq!(
        (code, err.contains("X_JOB_PAGE_INVALID")),
        (1, true),
        "{err}"
    );

    // retry --from-step, promote, cancel, rm.
    let (code, out, _) = jobs_cli(
        &schema,
        &["retry", &dead.id.to_string(), "--from-step", "push"],
    )
    .await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with(&format!("requeued {} from step `push`", dead.id)),
        "{out}"
    );
    let (code, out, _) = jobs_cli(&schema, &["promote", &later.id.to_string()]).await;
    assert_eq!(
        (code, out),
        (0, format!("promoted {}: due now on `billing`\n", later.id))
    );
    let (code, out, _) = jobs_cli(
        &schema,
        &["cancel", &later.id.to_string(), "--actor", "oncall:ana"],
    )
    .await;
    assert_eq!(
        (code, out),
        (0, format!("cancelled {} (was ready)\n", later.id))
    );
    // Each change is in the job's history: who (`--actor`, else `cli:$USER`), what, when.
    let (code, out, _) = jobs_cli(&schema, &["show", &later.id.to_string()]).await;
    assert_eq!(code, 0);
    let history = &out[out.find("\nhistory\n").expect("a history table")..];
    assert!(
        history.contains("oncall:ana") && history.contains("cancel"),
        "{history}"
    );
    assert!(
        history.contains("cli:") && history.contains("promote"),
        "{history}"
    );
    let (_, out, _) = jobs_cli(&schema, &["show", &dead.id.to_string(), "--json"]).await;
    let detail: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(detail["history"][0]["verb"], "requeue_from_step");
    assert_eq!(detail["history"][0]["detail"], "push");
    assert!(detail["history"][0]["actor"]
        .as_str()
        .is_some_and(|a| a.starts_with("cli:")));
    let shown = mcp
        .call("job.show", &{
            let mut args = serde_json::Map::new();
            args.insert("id".into(), dead.id.to_string().into());
            args
        })
        .await
        .unwrap();
    assert_eq!(shown["history"][0]["verb"], "requeue_from_step");
    let (code, _, err) = jobs_cli(&schema, &["cancel", &later.id.to_string()]).await;
    assert_eq!(
        (code, err.contains("X_JOB_NOT_CANCELLABLE")),
        (1, true),
        "{err}"
    );
    let (code, out, _) = jobs_cli(&schema, &["rm", &later.id.to_string()]).await;
    assert_eq!(code, 0, "{out}");
    assert!(jobs.job(later.id).await.unwrap().is_none());

    // pause: the next claim skips the queue; resume: it claims again.
    let (code, _, _) = jobs_cli(&schema, &["pause", "crm"]).await;
    assert_eq!(code, 0);
    assert!(
        worker.tick().await.unwrap().is_empty(),
        "paused: nothing claimed"
    );
    let (_, out, _) = jobs_cli(&schema, &["ls", "--queue", "crm"]).await;
    assert!(out.contains("crm (paused)"), "{out}");
    let (code, out, _) = jobs_cli(&schema, &["resume", "crm"]).await;
    assert_eq!((code, out.as_str()), (0, "resumed `crm`\n"));
    assert_eq!(
        worker.tick().await.unwrap().len(),
        1,
        "resumed: the requeued job runs"
    );

    // stats: per-job outcomes from the counters the settles moved.
    let (code, out, _) = jobs_cli(&schema, &["stats", "--json"]).await;
    assert_eq!(code, 0);
    let stats: serde_json::Value = serde_json::from_str(&out).unwrap();
    let totals = stats["last_24h"].as_array().unwrap();
    let crm = totals.iter().find(|t| t["name"] == "crm.sync").unwrap();
    assert_eq!(crm["dead"], 2, "{out}");
    let billing = totals
        .iter()
        .find(|t| t["name"] == "billing.send_invoice")
        .unwrap();
    assert_eq!(billing["done"], 1, "{out}");
    let (_, out, _) = jobs_cli(&schema, &["stats"]).await;
    assert!(out.contains("last 24 hours, per job"), "{out}");

    // tasks: none fired in this schema, and no scheduler leads. The tasks listed are the ones
    // linked into this binary (other modules declare some), each declared here.
    let (code, out, _) = jobs_cli(&schema, &["tasks", "--json"]).await;
    assert_eq!(code, 0, "{out}");
    let tasks: serde_json::Value = serde_json::from_str(&out).unwrap();
    let fields: Vec<&String> = tasks.as_object().unwrap().keys().collect();
    assert_eq!(fields, ["leader", "tasks"], "{out}");
    assert_eq!(tasks["leader"], serde_json::Value::Null, "{out}");
    let listed = tasks["tasks"].as_array().unwrap();
    let linked: Vec<&str> = jobs::Registry::global()
        .unwrap()
        .tasks()
        .map(|t| t.descriptor().name)
        .collect();
    assert_eq!(
        listed
            .iter()
            .map(|t| t["task"].as_str().unwrap())
            .collect::<Vec<_>>(),
        linked,
        "{out}"
    );
    for task in listed {
        assert_eq!(task["declared_here"], true, "{out}");
        assert_eq!(task["last_fired_at"], serde_json::Value::Null, "{out}");
        assert_eq!(task["last_occurrence"], serde_json::Value::Null, "{out}");
    }
    let (_, out, _) = jobs_cli(&schema, &["tasks"]).await;
    assert!(out.starts_with("leader: none"), "{out}");

    // workers: a started worker announces its row (with its queue limits), and forgets it on
    // shutdown.
    let handle = jobs
        .worker()
        .queues(["billing"])
        .concurrency(4)
        .queue_limits(
            "billing",
            jobs::QueueLimits::new()
                .concurrency(2)
                .rate(30, Duration::from_secs(60)),
        )
        .build()
        .unwrap()
        .start();
    let id = handle.worker().id().to_string();
    wait_until("the worker's registry row", || {
        let jobs = jobs.clone();
        async move { !jobs.operator().workers().await.unwrap().is_empty() }
    })
    .await;
    let (code, out, _) = jobs_cli(&schema, &["workers"]).await;
    assert_eq!(code, 0);
    assert!(out.contains(&id) && out.contains("0/4"), "{out}");
    assert!(
        out.contains("LIMITS") && out.contains("billing: 2 in flight, 30 per 1m"),
        "{out}"
    );
    let (_, out, _) = jobs_cli(&schema, &["workers", "--json"]).await;
    let rows: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        rows[0]["settings"]["queue_limits"][0],
        serde_json::json!({"queue": "billing", "concurrency": 2, "rate": {"limit": 30, "per_ms": 60000}}),
        "{out}"
    );
    if let Some(hold) = std::env::var("JOBS_CLI_DEMO_HOLD")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        eprintln!("demo schema: {schema}");
        tokio::time::sleep(Duration::from_secs(hold)).await;
    }
    handle.shutdown().await;
    let (_, out, _) = jobs_cli(&schema, &["workers", "--json"]).await;
    assert_eq!(out.trim(), "[]");
}

#[tokio::test]
async fn no_database_is_a_usage_error() {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    // An empty URL flag, so the environment's DATABASE_URL is not read, whatever it holds.
    let code = jobs::cli::run(["jobs", "--database-url", "", "ls"], &mut out, &mut err).await;
    let err = String::from_utf8(err).unwrap();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("X_CLI_BAD_FLAG"), "{err}");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(
        jobs::cli::run(["jobs", "frobnicate"], &mut out, &mut err).await,
        2
    );
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(
        jobs::cli::run(["jobs", "--help"], &mut out, &mut err).await,
        0
    );
    assert!(String::from_utf8(out).unwrap().contains("retry"));
}
