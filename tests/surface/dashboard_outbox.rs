//! The outbox on the dashboard, over real HTTP on 127.0.0.1: the overview's panel and the
//! `/metrics` gauges when the client has an outbox installed, none without one or for a
//! tenant's dashboard, a failed read shown in the panel; and `jobs dashboard` showing the
//! outbox beside the jobs, or refusing an `--outbox-url` it cannot read before it serves.

use crate::support;

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use jobs::clock::SystemClock;
use jobs::dashboard::standalone::{app, Credentials};
use jobs::dashboard::DashboardOptions;
use jobs::driver::outbox::{OutboxClaimParams, DEFAULT_OUTBOX_CLAIM_LEASE};
use jobs::driver::sqlite::SqliteOutbox;
use jobs::driver::{MemoryDriver, MemoryOutbox};
use jobs::outbox::OutboxMode;
use jobs::prelude::*;
use jobs::sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};

use crate::cli_outbox::{settle_four, staging, Receipt, SendReceipt};
use support::sqlite::TempDir;

/// Serves the standalone dashboard (no credentials: a local manager) for `jobs`.
async fn serve(jobs: Jobs, options: DashboardOptions) -> SocketAddr {
    let router = app(jobs, options, Credentials::default()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

async fn get(addr: SocketAddr, path: &str) -> String {
    let response = reqwest::get(format!("http://{addr}{path}")).await.unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.text().await.unwrap()
}

/// The overview's outbox panel, or `None` when the page has none.
fn outbox_panel(page: &str) -> Option<&str> {
    let start = page.find("<section class=\"card\" id=\"outbox\">")?;
    let end = start + page[start..].find("</section>").expect("the panel ends");
    Some(&page[start..end])
}

/// A memory job store with a memory outbox holding [`settle_four`]'s rows, staged 90 s ago;
/// answers a client on the real clock over both, as an app's dashboard has.
async fn four_rows() -> Jobs {
    let outbox = MemoryOutbox::new();
    let staged = staging(MemoryDriver::new(), outbox.clone());
    let mut tx = outbox.begin();
    for order_id in 1..=4 {
        SendReceipt::enqueue_in(&staged, &mut tx, Receipt { order_id })
            .await
            .unwrap();
    }
    tx.commit();
    settle_four(&outbox, staged.now()).await;
    Jobs::with_clock(staged.driver().clone(), Arc::new(SystemClock))
        .with_outbox(outbox, OutboxMode::Optional)
}

#[tokio::test]
async fn the_overview_shows_the_outbox_and_metrics_its_gauges() {
    let jobs = four_rows().await;
    let addr = serve(jobs.clone(), DashboardOptions::default()).await;
    let page = get(addr, "/").await;
    let panel = outbox_panel(&page).unwrap_or_else(|| panic!("an outbox panel: {page}"));
    let cells: Vec<&str> = panel
        .split("<td>")
        .skip(1)
        .map(|cell| cell.split("</td>").next().unwrap())
        .collect();
    assert_eq!(cells.len(), 6, "{panel}");
    assert_eq!(cells[0], "2", "backlog: {panel}");
    let age: f64 = cells[1]
        .strip_suffix('s')
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("an age in seconds: {panel}"));
    assert!(age >= 90.0, "staged 90 s ago: {panel}");
    assert_eq!(cells[2], "1", "failing: {panel}");
    assert_eq!(cells[3], "<code>X_DRIVER_UNAVAILABLE</code>", "{panel}");
    assert_eq!(cells[4], "1", "refused: {panel}");
    assert_eq!(cells[5], "1", "published: {panel}");
    assert!(panel.contains("No relay holds the lease."), "{panel}");

    let metrics = get(addr, "/metrics").await;
    for line in [
        "\njobs_outbox_backlog 2\n",
        "\njobs_outbox_failing 1\n",
        "\njobs_outbox_refused 1\n",
        "\njobs_outbox_published 1\n",
        "# TYPE jobs_outbox_oldest_staged_seconds gauge\n",
        "\njobs_outbox_lease_held 0\n",
        "# TYPE jobs_outbox_lease_claim_seconds gauge\n",
    ] {
        assert!(metrics.contains(line), "{line:?} in {metrics}");
    }

    // A tenant's dashboard leaves out what spans every tenant, the outbox too.
    let scoped = serve(jobs.clone(), DashboardOptions::default().for_tenant("acme")).await;
    assert!(outbox_panel(&get(scoped, "/").await).is_none());

    // A relay claims the rows left: the panel names it, the gauges count its lease.
    let claimed_at = jobs.now() - chrono::Duration::seconds(5);
    let held = jobs
        .outbox()
        .expect("an outbox")
        .outbox_claim(&OutboxClaimParams {
            holder: "relay:panel".into(),
            limit: 10,
            lease: DEFAULT_OUTBOX_CLAIM_LEASE,
            now: claimed_at,
            after: None,
        })
        .await
        .expect("claim");
    assert_eq!(held.len(), 2);
    let page = get(addr, "/").await;
    let panel = outbox_panel(&page).unwrap_or_else(|| panic!("an outbox panel: {page}"));
    assert!(
        panel.contains("Relay holding the lease: <code>relay:panel</code>, last claim "),
        "{panel}"
    );
    let metrics = get(addr, "/metrics").await;
    assert!(
        metrics.contains("\njobs_outbox_lease_held 1\n"),
        "{metrics}"
    );
    let age: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("jobs_outbox_lease_claim_seconds "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("a lease age: {metrics}"));
    assert!(age >= 5.0, "claimed 5 s ago: {metrics}");
}

#[tokio::test]
async fn no_outbox_no_panel_and_no_gauges() {
    let addr = serve(Jobs::memory(), DashboardOptions::default()).await;
    let page = get(addr, "/").await;
    assert!(page.contains("<h2>Queues</h2>"), "{page}");
    assert!(outbox_panel(&page).is_none(), "{page}");
    assert!(!get(addr, "/metrics").await.contains("outbox"));
}

#[tokio::test]
async fn an_outbox_that_cannot_be_read_shows_in_its_panel() {
    // An app file nobody installed the outbox in: every read is refused.
    let dir = TempDir::new("dashboard_outbox_bare");
    let options = SqliteConnectOptions::from_str(&dir.url())
        .unwrap()
        .create_if_missing(true);
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap();
    let jobs = Jobs::memory().with_outbox(SqliteOutbox::new(pool), OutboxMode::Optional);
    let addr = serve(jobs, DashboardOptions::default()).await;
    let page = get(addr, "/").await;
    assert!(
        page.contains("<h2>Queues</h2>"),
        "the rest of the page: {page}"
    );
    let panel = outbox_panel(&page).unwrap_or_else(|| panic!("an outbox panel: {page}"));
    assert!(
        panel.contains("could not be read: <code>X_DRIVER_SCHEMA_MISSING</code>"),
        "{panel}"
    );
    // A scrape is all or nothing: the outbox's failure is the scrape's.
    let response = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .unwrap();
    assert_ne!(response.status(), 200);
}

/// What the operator tool writes, readable while it still runs.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn credentials_in_env() -> bool {
    [
        "JOBS_DASHBOARD_TOKEN",
        "JOBS_DASHBOARD_READ_TOKEN",
        "JOBS_DASHBOARD_USER",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some())
}

/// Runs `jobs dashboard --listen 127.0.0.1:0 <args>` on a thread of its own (it serves until
/// the test process ends) and answers the address it listens on.
async fn tool_dashboard(args: Vec<String>) -> String {
    let out = Captured::default();
    let mut tool_out = out.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut argv = vec!["jobs", "dashboard", "--listen", "127.0.0.1:0"];
        argv.extend(args.iter().map(String::as_str));
        let mut err = Vec::new();
        let code = runtime.block_on(jobs::cli::run(argv, &mut tool_out, &mut err));
        panic!(
            "the dashboard stopped ({code}): {}",
            String::from_utf8_lossy(&err)
        );
    });
    let listening = |out: &Captured| {
        let text = String::from_utf8_lossy(&out.0.lock().unwrap()).into_owned();
        text.strip_prefix("dashboard on ")
            .and_then(|rest| rest.lines().next())
            .map(str::to_string)
    };
    support::wait::until(
        std::time::Duration::from_secs(20),
        "the tool to listen",
        || {
            let out = out.clone();
            async move { listening(&out).is_some() }
        },
    )
    .await;
    listening(&out).unwrap()
}

#[tokio::test]
async fn the_operator_tools_dashboard_shows_the_outbox_beside_the_jobs() {
    if credentials_in_env() {
        return; // the tool would (rightly) ask this test for credentials
    }
    let (pool, schema) = support::pg::schema("dashboard_outbox_tool").await;
    let driver = jobs::driver::PostgresDriver::new(pool.clone(), &schema).unwrap();
    let outbox = jobs::driver::postgres::PostgresOutbox::of(&driver);
    let jobs = staging(driver, outbox.clone());
    let mut tx = pool.begin().await.unwrap();
    for order_id in 1..=4 {
        SendReceipt::enqueue_in(&jobs, &mut tx, Receipt { order_id })
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    settle_four(&outbox, jobs.now()).await;

    let base = tool_dashboard(vec![
        "--database-url".into(),
        support::pg::database_url().into(),
        "--schema".into(),
        schema.clone(),
    ])
    .await;
    let page = reqwest::get(&base).await.unwrap().text().await.unwrap();
    let panel = outbox_panel(&page).unwrap_or_else(|| panic!("an outbox panel: {page}"));
    assert!(panel.contains("<td>2</td>"), "the backlog: {panel}");
    assert!(panel.contains("X_DRIVER_UNAVAILABLE"), "{panel}");

    // A SQLite job store without x_outbox (as one migrated before the outbox came): the
    // overview, and no panel.
    let dir = TempDir::new("dashboard_outbox_tool_sqlite");
    let file = support::sqlite::driver_in(&dir).await;
    jobs::sqlx::raw_sql("drop table x_outbox")
        .execute(file.pool())
        .await
        .unwrap();
    drop(file);
    let base = tool_dashboard(vec!["--database-url".into(), dir.url()]).await;
    let page = reqwest::get(&base).await.unwrap().text().await.unwrap();
    assert!(page.contains("<h2>Queues</h2>"), "{page}");
    assert!(outbox_panel(&page).is_none(), "{page}");
}

#[tokio::test]
async fn the_operator_tools_dashboard_refuses_an_outbox_url_it_cannot_read() {
    if credentials_in_env() {
        return;
    }
    let dir = TempDir::new("dashboard_outbox_tool_refused");
    let bare = format!("sqlite://{}", dir.path().join("app.db").display());
    let options = SqliteConnectOptions::from_str(&bare)
        .unwrap()
        .create_if_missing(true);
    drop(
        SqlitePoolOptions::new()
            .connect_with(options)
            .await
            .unwrap(),
    );
    for (url, code, expected) in [
        ("redis://127.0.0.1/".to_string(), 2, "X_CLI_BAD_FLAG"),
        (bare, 1, "X_DRIVER_SCHEMA_MISSING"),
    ] {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let exit = jobs::cli::run(
            [
                "jobs",
                "dashboard",
                "--listen",
                "127.0.0.1:0",
                "--database-url",
                "memory:",
                "--outbox-url",
                &url,
            ],
            &mut out,
            &mut err,
        )
        .await;
        let err = String::from_utf8(err).unwrap();
        assert_eq!(exit, code, "{err}");
        assert!(err.contains(expected), "{err}");
        assert!(out.is_empty(), "it never listened");
    }
}
