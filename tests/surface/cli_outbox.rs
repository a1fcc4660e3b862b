//! `jobs outbox`: the transactional outbox's figures, read beside the jobs (Postgres, SQLite)
//! and in an app database of its own (`--outbox-url`), and its refusals: a URL naming no
//! database an outbox lives in, a job store that keeps none, a database without `x_outbox`.

use crate::support;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use jobs::clock::TestClock;
use jobs::driver::outbox::{
    OutboxClaimParams, OutboxPublished, OutboxSettle, OutboxStore, DEFAULT_OUTBOX_CLAIM_LEASE,
};
use jobs::driver::postgres::PostgresOutbox;
use jobs::driver::sqlite::SqliteOutbox;
use jobs::driver::{JobDriver, PostgresDriver, SqliteDriver};
use jobs::outbox::OutboxMode;
use jobs::prelude::*;
use jobs::sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

use support::cli::{jobs_cli, jobs_cli_on};
use support::sqlite::TempDir;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Receipt {
    pub(crate) order_id: u64,
}

/// Staged through the outbox by these tests; never run.
#[job(name = "cli_outbox.receipt", key = "receipt:{order_id}", tenant = none, queue = "receipts")]
pub(crate) async fn send_receipt(_run: Run, _input: Receipt) -> Result<(), JobError> {
    Ok(())
}

/// How long before now the rows are staged: the age the tool reports.
pub(crate) const STAGED_AGO: Duration = Duration::from_secs(90);

/// A client over `driver` whose clock stands [`STAGED_AGO`] in the past, staging through
/// `outbox`.
pub(crate) fn staging(driver: impl JobDriver, outbox: impl OutboxStore) -> Jobs {
    let past = chrono::Utc::now() - chrono::Duration::from_std(STAGED_AGO).unwrap();
    Jobs::with_clock(Arc::new(driver), Arc::new(TestClock::at(past)))
        .with_outbox(outbox, OutboxMode::Optional)
}

/// What a relay would leave of four committed rows: the first published, the second refused
/// for good, the third's publish failed (`X_DRIVER_UNAVAILABLE`), the fourth handed back
/// untouched. The outbox then reads: backlog 2, failing 1, refused 1, published 1.
pub(crate) async fn settle_four(store: &dyn OutboxStore, now: jobs::clock::Timestamp) {
    let rows = store
        .outbox_claim(&OutboxClaimParams {
            holder: "test-relay".into(),
            limit: 10,
            lease: DEFAULT_OUTBOX_CLAIM_LEASE,
            now,
            after: None,
        })
        .await
        .expect("claim");
    assert_eq!(rows.len(), 4, "the four committed rows");
    let settle = OutboxSettle {
        holder: "test-relay",
        now,
    };
    let id = |i: usize| rows[i].request.id;
    let published = [OutboxPublished {
        id: id(0),
        deduped: false,
    }];
    assert_eq!(
        store.outbox_published(&settle, &published).await.unwrap(),
        1
    );
    assert_eq!(
        store
            .outbox_refused(&settle, id(1), "X_JOB_DUPLICATE")
            .await
            .unwrap(),
        1
    );
    let failed = Some((id(2), "X_DRIVER_UNAVAILABLE"));
    assert_eq!(
        store
            .outbox_release(&settle, &[id(2), id(3)], failed)
            .await
            .unwrap(),
        2
    );
}

/// The figures of [`settle_four`], as `jobs outbox --json` prints them.
fn assert_four(json: &serde_json::Value, store: &str) {
    assert_eq!(json["store"], store, "{json}");
    assert_eq!(json["backlog"], 2, "{json}");
    assert_eq!(json["failing"], 1, "{json}");
    assert_eq!(json["last_error_code"], "X_DRIVER_UNAVAILABLE", "{json}");
    assert_eq!(json["refused"], 1, "{json}");
    assert_eq!(json["published"], 1, "{json}");
    let age = json["oldest_staged_seconds"].as_f64().expect("an age");
    assert!(
        age >= STAGED_AGO.as_secs_f64(),
        "staged {STAGED_AGO:?} ago: {json}"
    );
    assert!(json["oldest_staged_at"].is_string(), "{json}");
    // The release handed the lease back: no relay holds it.
    assert_eq!(json["lease"], serde_json::Value::Null, "{json}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_beside_the_jobs_on_postgres() {
    let (pool, schema) = support::pg::schema("cli_outbox_pg").await;
    let driver = PostgresDriver::new(pool.clone(), &schema).unwrap();
    let outbox = PostgresOutbox::of(&driver);
    let jobs = staging(driver, outbox.clone());

    // An empty outbox: nothing staged, no age.
    let (code, out, err) = jobs_cli(&schema, &["outbox"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!(
            "outbox         postgres, schema `{schema}`, beside the jobs\n"
        )),
        "{out}"
    );
    assert!(out.contains("\nbacklog        0\n"), "{out}");
    assert!(out.contains("\noldest staged  -\n"), "{out}");

    let mut tx = pool.begin().await.unwrap();
    for order_id in 1..=4 {
        SendReceipt::enqueue_in(&jobs, &mut tx, Receipt { order_id })
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    settle_four(&outbox, jobs.now()).await;

    let (code, out, err) = jobs_cli(&schema, &["outbox"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\nbacklog        2\n"), "{out}");
    assert!(
        out.contains(" (1m ago)\n"),
        "staged 90 s ago reads as a minute: {out}"
    );
    assert!(
        out.contains("\nfailing        1 (last error X_DRIVER_UNAVAILABLE)\n"),
        "{out}"
    );
    assert!(out.contains("\nrefused        1\n"), "{out}");
    assert!(
        out.contains("\npublished      1 (kept until the outbox purge)\n"),
        "{out}"
    );
    assert!(
        out.contains("\nrelay          - (no relay holds the lease)\n"),
        "{out}"
    );

    let json = json_of(jobs_cli(&schema, &["outbox", "--json"]).await);
    assert_four(&json, "postgres");
    assert_eq!(json["schema"], schema.as_str());
    assert_eq!(json["source"], "database-url");

    // The same outbox named by --outbox-url, whatever job store --database-url names.
    let url = support::pg::database_url();
    let json = json_of(
        jobs_cli_on(
            "memory:",
            &[
                "outbox",
                "--outbox-url",
                url,
                "--outbox-schema",
                &schema,
                "--json",
            ],
        )
        .await,
    );
    assert_four(&json, "postgres");
    assert_eq!(json["source"], "outbox-url");

    // A relay claims the two rows left and goes quiet: the tool names it and its last claim,
    // 90 s ago by the staging clock, past the default lease.
    let held = outbox
        .outbox_claim(&OutboxClaimParams {
            holder: "relay:quiet".into(),
            limit: 10,
            lease: DEFAULT_OUTBOX_CLAIM_LEASE,
            now: jobs.now(),
            after: None,
        })
        .await
        .expect("claim");
    assert_eq!(held.len(), 2);
    let (code, out, err) = jobs_cli(&schema, &["outbox"]).await;
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("relay "))
        .unwrap_or_else(|| panic!("a relay line: {out}"));
    assert!(
        line.starts_with("relay          relay:quiet (last claim "),
        "{out}"
    );
    assert!(
        line.ends_with(", 1m ago, past the default 30 s lease)"),
        "{out}"
    );
    let json = json_of(jobs_cli(&schema, &["outbox", "--json"]).await);
    assert_eq!(json["lease"]["holder"], "relay:quiet", "{json}");
    assert!(json["lease"]["claimed_at"].is_string(), "{json}");
    let age = json["lease"]["claim_seconds"].as_f64().expect("an age");
    assert!(age >= STAGED_AGO.as_secs_f64(), "{json}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_beside_the_jobs_on_sqlite() {
    let dir = TempDir::new("cli_outbox_sqlite");
    let driver = support::sqlite::driver_in(&dir).await;
    let outbox = SqliteOutbox::of(&driver);
    let pool = driver.pool().clone();
    let jobs = staging(driver, outbox.clone());
    let mut tx = pool.begin().await.unwrap();
    for order_id in 1..=4 {
        SendReceipt::enqueue_in(&jobs, &mut tx, Receipt { order_id })
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    settle_four(&outbox, jobs.now()).await;

    let (code, out, err) = jobs_cli_on(&dir.url(), &["outbox"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("outbox         sqlite, beside the jobs\n"),
        "{out}"
    );
    assert!(
        out.contains("\nfailing        1 (last error X_DRIVER_UNAVAILABLE)\n"),
        "{out}"
    );
    let json = json_of(jobs_cli_on(&dir.url(), &["outbox", "--json"]).await);
    assert_four(&json, "sqlite");
    assert_eq!(json["schema"], serde_json::Value::Null);
}

/// An app file of its own, its outbox installed, feeding a job store elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_database_apart_is_read_at_outbox_url() {
    let dir = TempDir::new("cli_outbox_app");
    let app_url = format!("sqlite://{}", dir.path().join("app.db").display());
    let app = app_pool(&app_url).await;
    let outbox = SqliteOutbox::new(app.clone());
    outbox.install().await.unwrap();
    let jobs = staging(jobs::driver::MemoryDriver::new(), outbox.clone());
    let mut tx = app.begin().await.unwrap();
    for order_id in 1..=4 {
        SendReceipt::enqueue_in(&jobs, &mut tx, Receipt { order_id })
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    settle_four(&outbox, jobs.now()).await;

    // JOBS_OUTBOX_URL's flag; the job store is Redis, which the verb never opens.
    let (code, out, err) = jobs_cli_on(
        "redis://127.0.0.1:1/",
        &["outbox", "--outbox-url", &app_url],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("outbox         sqlite, at --outbox-url\n"),
        "{out}"
    );
    assert!(out.contains("\nbacklog        2\n"), "{out}");
    let json = json_of(
        jobs_cli_on(
            "redis://127.0.0.1:1/",
            &["outbox", "--outbox-url", &app_url, "--json"],
        )
        .await,
    );
    assert_four(&json, "sqlite");
    assert_eq!(json["source"], "outbox-url");
}

/// A SQLite pool on `url`, creating the file.
async fn app_pool(url: &str) -> SqlitePool {
    let options = SqliteConnectOptions::from_str(url)
        .unwrap()
        .create_if_missing(true);
    SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outbox_url_of_another_kind_is_a_usage_error() {
    let (code, out, err) = jobs_cli_on(
        "memory:",
        &[
            "outbox",
            "--outbox-url",
            "mysql://root:hunter2@db.internal/app",
        ],
    )
    .await;
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.starts_with("error: X_CLI_BAD_FLAG: "), "{err}");
    assert!(err.contains("  fix: pass --outbox-url"), "{err}");
    assert!(!err.contains("hunter2"), "the URL is never repeated: {err}");

    // A job store that keeps no outbox, and no --outbox-url: told to pass one.
    let (code, _, err) = jobs_cli_on("redis://:hunter2@127.0.0.1:1/", &["outbox"]).await;
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("X_CLI_BAD_FLAG") && err.contains("keeps no outbox"),
        "{err}"
    );
    assert!(err.contains("--outbox-url"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");

    // --json: the refusal as JSON.
    let (code, out, _) = jobs_cli_on(
        "memory:",
        &["outbox", "--json", "--outbox-url", "redis://127.0.0.1/"],
    )
    .await;
    assert_eq!(code, 2);
    let json: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(json["error"]["code"], "X_CLI_BAD_FLAG");

    // A SQLite path that does not exist is not created.
    let dir = TempDir::new("cli_outbox_nofile");
    let missing = dir.path().join("typo.db");
    let url = format!("sqlite://{}", missing.display());
    let (code, _, err) = jobs_cli_on("memory:", &["outbox", "--outbox-url", &url]).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not exist"), "{err}");
    assert!(!missing.exists(), "the tool created {}", missing.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_without_x_outbox_is_told_how_to_get_one() {
    // An app's Postgres schema nobody installed the outbox in.
    let (pool, schema) = support::pg::schema("cli_outbox_missing").await;
    let bare = format!("{schema}_app");
    jobs::sqlx::raw_sql(jobs::sqlx::AssertSqlSafe(format!("create schema {bare}")))
        .execute(&pool)
        .await
        .unwrap();
    let url = support::pg::database_url();
    let (code, _, err) = jobs_cli_on(
        "memory:",
        &["outbox", "--outbox-url", url, "--outbox-schema", &bare],
    )
    .await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "error: X_DRIVER_SCHEMA_MISSING: the database at --outbox-url has no outbox table `{bare}.x_outbox`\n"
        )),
        "{err}"
    );
    assert!(
        err.contains("  fix: install the outbox there: `PostgresOutbox::install()`"),
        "{err}"
    );
    assert!(!err.contains("relation"), "no raw SQL error: {err}");

    // Installed, the same command reads it.
    PostgresOutbox::new(pool.clone(), &bare)
        .unwrap()
        .install()
        .await
        .unwrap();
    let (code, out, err) = jobs_cli_on(
        "memory:",
        &["outbox", "--outbox-url", url, "--outbox-schema", &bare],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\nbacklog        0\n"), "{out}");

    // A SQLite job store whose file never saw the migrations: `jobs migrate` is the fix.
    let dir = TempDir::new("cli_outbox_unmigrated");
    let file = SqliteDriver::connect(&dir.url()).await.unwrap();
    drop(file);
    let (code, _, err) = jobs_cli_on(&dir.url(), &["outbox"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with(
            "error: X_DRIVER_SCHEMA_MISSING: the job store's database has no outbox table `x_outbox`\n"
        ),
        "{err}"
    );
    assert!(err.contains("  fix: run `jobs migrate`"), "{err}");
    assert!(!err.contains("no such table"), "no raw SQL error: {err}");

    // An app's SQLite file without it, at --outbox-url.
    let app_url = format!("sqlite://{}", dir.path().join("app.db").display());
    drop(app_pool(&app_url).await);
    let (code, _, err) = jobs_cli_on("memory:", &["outbox", "--outbox-url", &app_url]).await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("no outbox table `x_outbox`") && err.contains("`SqliteOutbox::install()`"),
        "{err}"
    );
}

/// The JSON a successful run of the tool printed (its stderr in the failure's message).
fn json_of((code, out, err): (u8, String, String)) -> serde_json::Value {
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).expect("json")
}
