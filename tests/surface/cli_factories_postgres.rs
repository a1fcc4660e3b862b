//! The factories in the CLI, against real Postgres: `jobs backfills` / `jobs backfill` over the
//! ledger of passes, and `jobs posting` over a `#[ledger]`'s book.

use crate::support;

use support::cli::jobs_cli;

use jobs::driver::PostgresDriver;
use jobs::prelude::*;

struct Row {
    id: i64,
}

async fn three_rows(
    _pass: Pass,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<Row, i64>, JobError> {
    let rows: Vec<Row> = (after.unwrap_or(0) + 1..=3)
        .take(limit as usize)
        .map(|id| Row { id })
        .collect();
    Ok(Page::keyed(rows, |row| row.id))
}

#[backfill(name = "cli.relabel", tenant = none, source = three_rows, batch = 2, rate = 1000.0)]
async fn relabel(_pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    let _ = rows.iter().map(|r| r.id).sum::<i64>();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfill_verbs_report_dry_run_enqueue_and_list_passes() {
    let (pool, schema) = support::pg::schema("cli_backfills").await;

    // Declared, never run: pending, and the exit code says so.
    let (code, _out, err) = jobs_cli(&schema, &["backfills", "--pending"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("X_BACKFILL_PENDING"), "{err}");
    assert!(err.contains("cli.relabel"), "{err}");

    // A dry run enqueues nothing.
    let (code, out, _) = jobs_cli(&schema, &["backfill", "cli.relabel"]).await;
    assert_eq!(code, 0);
    assert!(
        out.starts_with("dry run: backfill `cli.relabel` (last pass: never run)"),
        "{out}"
    );
    let (code, _, err) = jobs_cli(&schema, &["backfill", "nope", "--write"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("X_BACKFILL_UNKNOWN"), "{err}");

    // --write enqueues the pass; a worker runs it; the ledger lists it completed.
    let (code, out, err) = jobs_cli(&schema, &["backfill", "cli.relabel", "--write"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("enqueued backfill `cli.relabel`"), "{out}");
    let jobs = Jobs::new(PostgresDriver::new(pool, &schema).unwrap());
    let kit_worker = jobs.worker().build().unwrap();
    for _ in 0..20 {
        if kit_worker.tick().await.unwrap().is_empty() {
            break;
        }
    }
    let (code, out, _) = jobs_cli(&schema, &["backfills"]).await;
    assert_eq!(code, 0);
    assert!(
        out.contains("cli.relabel") && out.contains("completed"),
        "{out}"
    );
    // The pending report, still failing on the other declaration of this binary.
    let (code, out, _) = jobs_cli(&schema, &["backfills", "--pending", "--json"]).await;
    assert_eq!(code, 1, "{out}");
    let error: serde_json::Value = serde_json::from_str(&out).unwrap();
    let report: serde_json::Value =
        serde_json::from_str(error["error"]["fix"].as_str().unwrap()).unwrap();
    assert_eq!(
        report["pending"],
        serde_json::json!(["cli.after-migration"])
    );
    let relabel = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "cli.relabel")
        .unwrap();
    assert_eq!(relabel["state"], "completed");
}

#[backfill(name = "cli.after-migration", tenant = none, source = three_rows,
           requires = "20261201093000_add_label")]
async fn relabel_after_migration(_pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    let _ = rows.len();
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfills_all_write_enqueues_every_pending_pass_through_the_gate() {
    let (_pool, schema) = support::pg::schema("cli_backfills_all").await;

    // Without --write: what would happen to each pending backfill, nothing enqueued.
    let (code, out, err) = jobs_cli(&schema, &["backfills", "--all", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    let row = |name: &str| rows.iter().find(|r| r["name"] == name).cloned().unwrap();
    assert_eq!(row("cli.relabel")["outcome"], "would enqueue");
    assert_eq!(row("cli.after-migration")["outcome"], "would refuse");
    assert_eq!(
        row("cli.after-migration")["code"],
        "X_BACKFILL_MIGRATION_PENDING"
    );
    let (_, out, _) = jobs_cli(&schema, &["backfill", "cli.after-migration"]).await;
    assert!(
        out.contains("--write would be refused") && out.contains("X_BACKFILL_MIGRATION_PENDING"),
        "{out}"
    );
    let (_, out, _) = jobs_cli(&schema, &["ls", "--json"]).await;
    assert!(
        !out.contains("cli.relabel"),
        "a dry run enqueues nothing: {out}"
    );

    // --write: each name on its own; the refused one does not stop the rest, and the exit
    // code says one was refused.
    let (code, _out, err) = jobs_cli(&schema, &["backfills", "--all", "--write"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("X_BACKFILL_PENDING"), "{err}");
    assert!(
        err.contains("cli.relabel") && err.contains("enqueued"),
        "{err}"
    );
    assert!(err.contains("X_BACKFILL_MIGRATION_PENDING"), "{err}");
    let (_, out, _) = jobs_cli(&schema, &["ls", "--json"]).await;
    assert!(out.contains("cli.relabel"), "{out}");
    assert!(!out.contains("cli.after-migration"), "{out}");

    // A bare --write without --all is a usage error.
    let (code, _, _) = jobs_cli(&schema, &["backfills", "--write"]).await;
    assert_ne!(code, 0);
}

#[ledger(name = "cli.payments", tenant = per_tenant, book = driver)]
pub struct CliPayment;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posting_prints_a_ledger_posting_s_lines() {
    let (pool, schema) = support::pg::schema("cli_posting").await;
    let jobs = Jobs::new(PostgresDriver::new(pool, &schema).unwrap());
    let posting = posting!("pay_1", [
        "assets:cash" => 1_250 EUR,
        "income:sales" => -1_250 EUR,
    ])
    .for_tenant("acme");
    CliPayment::enqueue(&jobs, posting).await.unwrap();
    let worker = jobs.worker().build().unwrap();
    while !worker.tick().await.unwrap().is_empty() {}

    let (code, out, err) = jobs_cli(
        &schema,
        &["posting", "cli.payments", "pay_1", "--tenant", "acme"],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("assets:cash") && out.contains("-1250") && out.contains("EUR"),
        "{out}"
    );
    let (code, _, err) = jobs_cli(
        &schema,
        &["posting", "cli.payments", "pay_2", "--tenant", "acme"],
    )
    .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("X_JOB_NOT_FOUND") && !err.contains("pay_2"),
        "{err}"
    );
}
