//! The dashboard in a real browser: headless Chromium driven through ChromeDriver (Debian's
//! `chromium` and `chromium-driver`, installed with apt-get when missing) against the dashboard
//! over a real Postgres. It opens the overview, filters jobs, opens a dead job, retries it from
//! a step and sees it run, pauses and resumes a queue, enqueues from the schema form (the
//! browser refusing an incomplete one first), sees a page refresh itself, and is refused an
//! action with the read role. Screenshots go to `$CARGO_TARGET_TMPDIR/dashboard-screens/`.

use crate::support;

use std::collections::HashSet;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use fantoccini::{Client, ClientBuilder, Locator};
use jobs::dashboard::{DashboardOptions, Viewer};
use jobs::prelude::*;
use serde_json::json;

use support::wait::until;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long the browser may take over one page, and ChromeDriver to come up.
const BOUND: Duration = Duration::from_secs(30);

#[derive(Serialize, Deserialize, JsonSchema)]
struct Signup {
    user_id: u64,
    org: String,
    note: Option<String>,
}

#[job(key = "browser-signup:{user_id}", tenant = org, queue = "browser-email")]
async fn browser_signup(_run: Run, _input: Signup) -> Result<(), JobError> {
    Ok(())
}

static HEALED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

#[derive(Serialize, Deserialize, JsonSchema)]
struct Charge {
    id: String,
    org: String,
}

#[job(key = "browser-charge:{id}", tenant = org, queue = "browser-work", retry(attempts = 1))]
async fn browser_charge(run: Run, input: Charge) -> Result<(), JobError> {
    run.step("prepare", async { Ok::<_, JobError>(1u32) })
        .await?;
    let id = input.id.clone();
    run.step("charge", async move {
        let healed = HEALED
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|h| h.contains(&id));
        if healed {
            Ok::<_, JobError>(2u32)
        } else {
            Err(JobError::terminal("card declined"))
        }
    })
    .await?;
    Ok(())
}

/// Installs Chromium and ChromeDriver with apt-get when either is missing (the tests run as
/// root; `.ci/run` runs them on a machine that may not have them yet).
fn ensure_browser() {
    support::apt::ensure(&[CHROMIUM, CHROMEDRIVER], &["chromium", "chromium-driver"]);
}

/// ChromeDriver on a loopback port of its own, stopped when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start_driver() -> Driver {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let driver = Driver { child, port };
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    until(BOUND, "chromedriver to listen", || async move {
        TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
    })
    .await;
    driver
}

async fn browser(driver: &Driver, profile: &Path) -> Client {
    let capabilities = json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": CHROMIUM,
            "args": [
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--window-size=1280,900",
                format!("--user-data-dir={}", profile.display()),
            ],
        },
    });
    let serde_json::Value::Object(capabilities) = capabilities else {
        unreachable!()
    };
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a Chromium session")
}

/// A dashboard on 127.0.0.1 under `/admin`, every request made by `viewer`.
async fn serve(jobs: Jobs, options: DashboardOptions, viewer: Viewer) -> String {
    let app = axum::Router::new()
        .nest("/admin", jobs::dashboard::router(jobs, options).unwrap())
        .layer(axum::middleware::from_fn(
            move |mut request: Request, next: Next| {
                let viewer = viewer.clone();
                async move {
                    request.extensions_mut().insert(viewer);
                    let response: Response = next.run(request).await;
                    response
                }
            },
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/admin")
}

/// Where screenshots go: the target's temp dir, and also `JOBS_DASHBOARD_SCREENS` when set
/// (`JOBS_DASHBOARD_SCREENS=docs/dashboard` refreshes the dashboard guide's pictures).
struct Screens(Vec<PathBuf>);

impl Screens {
    fn new() -> Screens {
        let mut dirs = vec![PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screens")];
        dirs.extend(std::env::var_os("JOBS_DASHBOARD_SCREENS").map(PathBuf::from));
        for dir in &dirs {
            std::fs::create_dir_all(dir).unwrap();
        }
        Screens(dirs)
    }

    async fn take(&self, client: &Client, name: &str) {
        let png = client.screenshot().await.unwrap();
        for dir in &self.0 {
            std::fs::write(dir.join(format!("{name}.png")), &png).unwrap();
        }
    }
}

async fn source_has(client: &Client, text: &str) -> bool {
    client.source().await.is_ok_and(|s| s.contains(text))
}

async fn wait_for(client: &Client, text: &str) {
    until(BOUND, text, || source_has(client, text)).await;
}

/// Asks the page to refresh its live part now (the `jobs:refresh` event the dashboard's script
/// listens to) and waits until it did: its refresh count reads `n` and the part it replaced is
/// gone. No clock is waited on.
async fn refresh_in_place(client: &Client, n: u32) {
    client
        .execute(
            "document.getElementById('live').setAttribute('data-stale', '1');
             document.dispatchEvent(new Event('jobs:refresh'));",
            vec![],
        )
        .await
        .unwrap();
    until(BOUND, &format!("refresh {n} in place"), || async move {
        client
            .execute(
                "return document.body.getAttribute('data-refreshed') === arguments[0]
                    && !document.querySelector('#live[data-stale]');",
                vec![json!(n.to_string())],
            )
            .await
            .is_ok_and(|done| done.as_bool() == Some(true))
    })
    .await;
}

/// What the page says of itself, through a script returning a string or a boolean.
async fn ask(client: &Client, script: &str) -> serde_json::Value {
    client.execute(script, vec![]).await.unwrap()
}

/// The live refresh keeps what the viewer typed, picked and opened: a half-filled enqueue form
/// and its open schema section, an open section of the manifest, and a typed, unsent filter
/// survive three refreshes each, while the refreshed list shows a job enqueued meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_keeps_what_the_viewer_typed_and_opened() {
    ensure_browser();
    let jobs = Jobs::memory();
    let manage = Viewer::new("ops@example.com", ["job:read", "job:manage"]);
    // An interval no test waits for: the test asks for each refresh itself.
    let options = DashboardOptions {
        refresh: Duration::from_secs(3600),
        ..DashboardOptions::default()
    };
    let base = serve(jobs.clone(), options, manage).await;
    let driver = start_driver().await;
    let profile = std::env::temp_dir().join(format!("jobs-chromium-{}", uuid::Uuid::new_v4()));
    let client = browser(&driver, &profile).await;

    // A half-filled enqueue form, its schema opened.
    client
        .goto(&format!("{base}/manifest/browser_signup"))
        .await
        .unwrap();
    wait_for(&client, "Input schema").await;
    client
        .find(Locator::Css("input[name='f.org']"))
        .await
        .unwrap()
        .send_keys("acme")
        .await
        .unwrap();
    client
        .find(Locator::Css("details#schema > summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    ask(&client, "document.activeElement.blur(); return true;").await;
    for n in 1..=3 {
        refresh_in_place(&client, n).await;
        let kept = ask(
            &client,
            "return [document.querySelector(\"input[name='f.org']\").value,
                     document.querySelector(\"input[name='f.user_id']\").value,
                     document.getElementById('schema').open];",
        )
        .await;
        assert_eq!(kept, json!(["acme", "", true]), "after refresh {n}");
    }
    // The picture of the form: half filled, its schema open, as the refreshes left it.
    Screens::new().take(&client, "enqueue").await;

    // An opened section of the manifest.
    client.goto(&format!("{base}/manifest")).await.unwrap();
    wait_for(&client, "browser_signup").await;
    client
        .find(Locator::Css("details#job-browser_signup > summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    for n in 1..=3 {
        refresh_in_place(&client, n).await;
        let open = ask(
            &client,
            "return [document.getElementById('job-browser_signup').open,
                     document.getElementById('job-browser_charge').open];",
        )
        .await;
        assert_eq!(open, json!([true, false]), "after refresh {n}");
    }

    // A typed filter, not sent, while the list below it refreshes.
    let first = BrowserSignup::enqueue(
        &jobs,
        Signup {
            user_id: 501,
            org: "acme".into(),
            note: None,
        },
    )
    .await
    .unwrap();
    client.goto(&format!("{base}/jobs")).await.unwrap();
    wait_for(&client, &first.id.to_string()).await;
    client
        .find(Locator::Css("input[name=queue]"))
        .await
        .unwrap()
        .send_keys("browser-em")
        .await
        .unwrap();
    client
        .find(Locator::Css("select[name=state]"))
        .await
        .unwrap()
        .select_by_value("ready")
        .await
        .unwrap();
    ask(&client, "document.activeElement.blur(); return true;").await;
    let mut later = Vec::new();
    for n in 1..=3 {
        let queued = BrowserSignup::enqueue(
            &jobs,
            Signup {
                user_id: 510 + u64::from(n),
                org: "acme".into(),
                note: None,
            },
        )
        .await
        .unwrap();
        later.push(queued.id.to_string());
        refresh_in_place(&client, n).await;
        let page = client.source().await.unwrap();
        assert!(page.contains(&queued.id.to_string()), "the list refreshed");
        let kept = ask(
            &client,
            "return [document.querySelector('input[name=queue]').value,
                     document.querySelector('select[name=state]').value];",
        )
        .await;
        assert_eq!(kept, json!(["browser-em", "ready"]), "after refresh {n}");
    }
    // The address never changed: the filter was kept, not sent.
    assert!(client
        .current_url()
        .await
        .unwrap()
        .as_str()
        .ends_with("/admin/jobs"));

    client.close().await.unwrap();
    drop(driver);
    let _ = std::fs::remove_dir_all(&profile);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_fixes_a_queue_from_the_browser() {
    ensure_browser();
    let jobs = Jobs::with_clock(
        support::pg::driver("dashboard_browser").await,
        Arc::new(jobs::clock::SystemClock),
    );
    let dead = BrowserCharge::enqueue(
        &jobs,
        Charge {
            id: "c1".into(),
            org: "acme".into(),
        },
    )
    .await
    .unwrap();
    let done = BrowserSignup::enqueue(
        &jobs,
        Signup {
            user_id: 1,
            org: "acme".into(),
            note: None,
        },
    )
    .await
    .unwrap();
    // More dead letters, for the lists and the pictures.
    for (id, org) in [("c2", "globex"), ("c3", "initech")] {
        BrowserCharge::enqueue(
            &jobs,
            Charge {
                id: id.into(),
                org: org.into(),
            },
        )
        .await
        .unwrap();
    }
    let worker = jobs.worker().build().unwrap();
    worker.tick().await.unwrap();
    until(BOUND, "the dead letters", || async {
        jobs.job(dead.id)
            .await
            .is_ok_and(|row| row.is_some_and(|r| r.state == JobState::Dead))
    })
    .await;

    let manage = Viewer::new("ops@example.com", ["job:read", "job:manage"]);
    let still = DashboardOptions {
        refresh: Duration::ZERO,
        ..DashboardOptions::default()
    };
    let base = serve(jobs.clone(), still, manage).await;
    let live = DashboardOptions {
        refresh: Duration::from_secs(1),
        ..DashboardOptions::default()
    };
    let reader = serve(
        jobs.clone(),
        live,
        Viewer::new("intern@example.com", ["job:read"]),
    )
    .await;

    let driver = start_driver().await;
    let profile = std::env::temp_dir().join(format!("jobs-chromium-{}", uuid::Uuid::new_v4()));
    let client = browser(&driver, &profile).await;
    let screens = Screens::new();

    // The overview.
    client.goto(&base).await.unwrap();
    wait_for(&client, "Throughput, last hour").await;
    assert!(source_has(&client, "browser-work").await);
    screens.take(&client, "overview").await;

    // Filter the jobs by queue.
    client.goto(&format!("{base}/jobs")).await.unwrap();
    let queue = client
        .find(Locator::Css("input[name=queue]"))
        .await
        .unwrap();
    queue.send_keys("browser-work").await.unwrap();
    client
        .find(Locator::Css("form.filters button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(BOUND, "the filtered list", || async {
        client
            .current_url()
            .await
            .is_ok_and(|u| u.as_str().contains("queue=browser-work"))
    })
    .await;
    let page = client.source().await.unwrap();
    assert!(page.contains(&dead.id.to_string()));
    assert!(!page.contains(&done.id.to_string()));
    screens.take(&client, "jobs").await;

    // The dead letters read why each failed.
    client.goto(&format!("{base}/dead")).await.unwrap();
    wait_for(&client, "card declined").await;
    screens.take(&client, "dead").await;
    client
        .goto(&format!("{base}/jobs?queue=browser-work"))
        .await
        .unwrap();
    wait_for(&client, &dead.id.to_string()).await;

    // Open the dead job, retry it from its failed step, and see it run.
    client
        .find(Locator::Css(&format!("a[href$='/jobs/{}']", dead.id)))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(&client, "card declined").await;
    screens.take(&client, "job").await;
    HEALED
        .lock()
        .unwrap()
        .get_or_insert_with(HashSet::new)
        .insert("c1".into());
    client
        .find(Locator::Css("select[name=from_step]"))
        .await
        .unwrap()
        .select_by_value("charge")
        .await
        .unwrap();
    client
        .find(Locator::XPath("//button[text()='Retry from step']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(&client, "Requeued").await;
    worker.tick().await.unwrap();
    client.refresh().await.unwrap();
    wait_for(&client, "badge done").await;
    assert_eq!(
        jobs.job(dead.id).await.unwrap().unwrap().state,
        JobState::Done
    );
    // The job's history names the viewer who retried it, and the step.
    let page = client.source().await.unwrap();
    let history = &page[page.find("<h2>History</h2>").expect("a History section")..];
    assert!(
        history.contains("ops@example.com") && history.contains("retried from step"),
        "{history}"
    );

    // Pause and resume a queue.
    client.goto(&format!("{base}/queues")).await.unwrap();
    let button = "//tr[td/a[text()='browser-email']]//button";
    client
        .find(Locator::XPath(button))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(&client, "badge paused").await;
    let operator = jobs.operator();
    let paused = operator.introspect().unwrap();
    assert_eq!(
        paused.queue_paused().await.unwrap()[0].queue,
        "browser-email"
    );
    screens.take(&client, "queues").await;
    client
        .find(Locator::XPath(button))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(&client, "Resumed.").await;
    assert!(paused.queue_paused().await.unwrap().is_empty());

    // Enqueue from the schema's form: the browser holds back an incomplete one.
    client
        .goto(&format!("{base}/manifest/browser_signup"))
        .await
        .unwrap();
    let org = client
        .find(Locator::Css("input[name='f.org']"))
        .await
        .unwrap();
    org.send_keys("acme").await.unwrap();
    let submit = client
        .find(Locator::Css("form.enqueue button[type=submit]"))
        .await
        .unwrap();
    submit.click().await.unwrap();
    let valid: bool = client
        .execute(
            "return document.querySelector('form.enqueue').checkValidity();",
            vec![],
        )
        .await
        .unwrap()
        .as_bool()
        .unwrap();
    assert!(!valid, "the form without user_id is invalid");
    assert!(client
        .current_url()
        .await
        .unwrap()
        .as_str()
        .ends_with("/manifest/browser_signup"));
    client
        .find(Locator::Css("input[name='f.user_id']"))
        .await
        .unwrap()
        .send_keys("77")
        .await
        .unwrap();
    submit.click().await.unwrap();
    wait_for(&client, "Enqueued.").await;
    assert!(source_has(&client, "ops@example.com").await);
    let listed = jobs
        .operator()
        .list_jobs(&jobs::driver::introspect::JobListParams {
            name: Some("browser_signup".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.jobs.len(), 2);

    // A reader's page refreshes itself, shows no actions, and an action it forges is refused.
    client.goto(&format!("{reader}/jobs")).await.unwrap();
    wait_for(&client, "intern@example.com").await;
    let fresh = BrowserSignup::enqueue(
        &jobs,
        Signup {
            user_id: 2,
            org: "acme".into(),
            note: None,
        },
    )
    .await
    .unwrap();
    wait_for(&client, &fresh.id.to_string()).await;
    client.goto(&format!("{reader}/queues")).await.unwrap();
    wait_for(&client, "browser-email").await;
    assert!(client
        .find_all(Locator::XPath(button))
        .await
        .unwrap()
        .is_empty());
    client
        .execute(
            "const f = document.createElement('form');
             f.method = 'post';
             f.action = location.pathname + '/browser-email/pause';
             document.body.appendChild(f);
             f.submit();",
            vec![],
        )
        .await
        .unwrap();
    wait_for(&client, "X_DASHBOARD_FORBIDDEN").await;
    screens.take(&client, "refused").await;
    assert!(paused.queue_paused().await.unwrap().is_empty());

    client.close().await.unwrap();
    drop(driver);
    let _ = std::fs::remove_dir_all(&profile);
}
