//! The web dashboard over real HTTP on 127.0.0.1: an axum server mounting
//! `jobs::dashboard::router` under `/admin` behind a layer of the test's own that names the
//! viewer (as an app's authentication would), driven with reqwest. The same scenario runs on
//! memory, Postgres and SQLite; the refusals, the escaping, the tenant scope, the enqueue form,
//! `/metrics` and the standalone credentials run on memory (they are the router's, not the
//! store's).

use crate::support;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use jobs::dashboard::{DashboardOptions, Viewer};
use jobs::driver::{JobDriver, JobId};
use jobs::prelude::*;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Welcome {
    user_id: u64,
    org: String,
    note: Option<String>,
}

/// A welcome for user `user_id` of the tenant `acme`, with no note.
fn acme(user_id: u64) -> Welcome {
    Welcome {
        user_id,
        org: "acme".into(),
        note: None,
    }
}

#[job(key = "dash-welcome:{user_id}", tenant = org, queue = "dash-email")]
async fn dash_welcome(run: Run, input: Welcome) -> Result<(), JobError> {
    run.step("send", async { Ok::<_, JobError>(input.user_id) })
        .await?;
    Ok(())
}

/// What [`dash_tally`] keeps.
#[derive(Serialize, Deserialize, JsonSchema)]
struct Tally {
    orders: u64,
    token: String,
}

/// Keeps its result (`keep_result`), which holds a secret.
#[job(key = "dash-tally:{user_id}", tenant = org, queue = "dash-tally", keep_result)]
async fn dash_tally(_run: Run, input: Welcome) -> Result<Tally, JobError> {
    Ok(Tally {
        orders: input.user_id,
        token: "tok-kept-result-77".into(),
    })
}

#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris")]
fn dash_digest(_at: Occurrence) -> Vec<Entry> {
    vec![Entry::of::<DashWelcome>(Welcome {
        user_id: 1000,
        org: "initech".into(),
        note: None,
    })]
}

/// The ids a test has "fixed": `dash_flaky` fails for good until its id is here.
static HEALED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn heal(id: &str) {
    HEALED
        .lock()
        .unwrap()
        .get_or_insert_with(HashSet::new)
        .insert(id.to_string());
}

fn healed(id: &str) -> bool {
    HEALED
        .lock()
        .unwrap()
        .as_ref()
        .is_some_and(|h| h.contains(id))
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Flaky {
    id: String,
    org: String,
    secret: String,
}

#[job(key = "dash-flaky:{id}", tenant = org, queue = "dash-work", retry(attempts = 1))]
async fn dash_flaky(run: Run, input: Flaky) -> Result<(), JobError> {
    run.step("prepare", async { Ok::<_, JobError>(1u32) })
        .await?;
    let id = input.id.clone();
    run.step("charge", async move {
        if healed(&id) {
            Ok::<_, JobError>(2u32)
        } else {
            Err(JobError::terminal(format!(
                "<script>alert('{id}')</script> declined"
            )))
        }
    })
    .await?;
    Ok(())
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Wordy {
    id: String,
    org: String,
}

/// Fails its step with a long, retryable error whose text is markup.
#[job(key = "dash-wordy:{id}", tenant = org, queue = "dash-wordy", retry(attempts = 3))]
async fn dash_wordy(run: Run, input: Wordy) -> Result<(), JobError> {
    let id = input.id.clone();
    run.step("call", async move {
        Err::<u32, _>(JobError::retryable(format!(
            "<script>alert('{id}')</script> upstream timed out; {}the tail end",
            "the gateway said nothing useful. ".repeat(8)
        )))
    })
    .await?;
    Ok(())
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Team {
    name: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Invite {
    team: Team,
    email: String,
}

/// At most 3 starts every 90 s per organisation.
#[job(
    key = "dash-rated:{user_id}",
    tenant = org,
    queue = "dash-email",
    rate(limit = 3, per = "90s", key = "{org}")
)]
async fn dash_rated(_run: Run, _input: Welcome) -> Result<(), JobError> {
    Ok(())
}

/// Declared above the default priority: its enqueue form chooses 3.
#[job(
    key = "dash-urgent:{user_id}",
    tenant = org,
    queue = "dash-email",
    priority = 3
)]
async fn dash_urgent(_run: Run, _input: Welcome) -> Result<(), JobError> {
    Ok(())
}

/// Debounced by 5 s, discarded if not started within the hour, its key held for an hour.
#[job(
    key = "dash-debounced:{user_id}",
    tenant = org,
    queue = "dash-email",
    debounce = "5s",
    unique(for = "1h"),
    expires_in = "1h"
)]
async fn dash_debounced(_run: Run, _input: Welcome) -> Result<(), JobError> {
    Ok(())
}

/// Takes its tenant from a nested field, which the enqueue form reads as JSON.
#[job(key = "dash-invite:{email}", tenant = |input| input.team.name.clone(), queue = "dash-email")]
async fn dash_invite(_run: Run, _input: Invite) -> Result<(), JobError> {
    Ok(())
}

/// A dashboard served on 127.0.0.1 under `/admin`; the `x-test-viewer` header names the role
/// the test's own layer grants (`read`, `manage`, `hostile`: a manager whose identity is
/// markup, `other`, or none: no viewer at all).
struct Dash {
    base: String,
    client: reqwest::Client,
    jobs: Jobs,
    cookie: String,
}

/// The test app's authentication: a header stands for a signed-in user.
async fn who(mut request: Request, next: Next) -> Response {
    let role = request
        .headers()
        .get("x-test-viewer")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    match role.as_deref() {
        Some("manage") => {
            request
                .extensions_mut()
                .insert(Viewer::new("ops@example.com", ["job:manage"]));
        }
        Some("read") => {
            request
                .extensions_mut()
                .insert(Viewer::new("intern@example.com", ["job:read"]));
        }
        Some("hostile") => {
            request
                .extensions_mut()
                .insert(Viewer::new("<script>alert('who')</script>", ["job:manage"]));
        }
        Some(_) => {
            request
                .extensions_mut()
                .insert(Viewer::new("guest@example.com", ["billing:read"]));
        }
        None => {}
    }
    next.run(request).await
}

async fn serve(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

impl Dash {
    async fn start(jobs: Jobs, options: DashboardOptions) -> Dash {
        let app = axum::Router::new()
            .nest(
                "/admin",
                jobs::dashboard::router(jobs.clone(), options).unwrap(),
            )
            .layer(axum::middleware::from_fn(who));
        let addr = serve(app).await;
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let mut dash = Dash {
            base: format!("http://{addr}"),
            client,
            jobs,
            cookie: String::new(),
        };
        // The first page sets the CSRF cookie.
        let response = dash.request("/admin", "manage").send().await.unwrap();
        assert_eq!(response.status(), 200);
        let set = response
            .headers()
            .get("set-cookie")
            .expect("the first page sets the CSRF cookie")
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            set.contains("HttpOnly") && set.contains("SameSite=Strict"),
            "{set}"
        );
        assert!(set.contains("Path=/admin"), "{set}");
        dash.cookie = set.split(';').next().unwrap().to_string();
        dash
    }

    fn request(&self, path: &str, role: &str) -> reqwest::RequestBuilder {
        let mut request = self.client.get(format!("{}{path}", self.base));
        if !role.is_empty() {
            request = request.header("x-test-viewer", role);
        }
        request
    }

    fn token(&self) -> &str {
        self.cookie.split_once('=').unwrap().1
    }

    async fn get(&self, path: &str, role: &str) -> (u16, String) {
        let response = self
            .request(path, role)
            .header("cookie", &self.cookie)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    }

    /// A form post as the dashboard's own pages send it: the cookie, the token, the origin.
    /// The token is signed for one viewer, so another role's post first loads a page as that
    /// viewer for its own cookie.
    async fn post(&self, path: &str, role: &str, fields: &[(&str, &str)]) -> (u16, String) {
        let cookie = match role {
            "manage" => self.cookie.clone(),
            _ => self.cookie_for(role).await,
        };
        let token = cookie.split_once('=').unwrap().1.to_string();
        let mut form: Vec<(&str, &str)> = vec![("csrf", &token)];
        form.extend_from_slice(fields);
        self.post_raw(path, role, Some(&cookie), &form, None).await
    }

    /// The CSRF cookie the dashboard sets for `role`'s viewer (the manager's when it sets
    /// none: a viewer refused every page).
    async fn cookie_for(&self, role: &str) -> String {
        let response = self.request("/admin", role).send().await.unwrap();
        response
            .headers()
            .get("set-cookie")
            .map(|set| {
                let set = set.to_str().unwrap();
                set.split(';').next().unwrap().to_string()
            })
            .unwrap_or_else(|| self.cookie.clone())
    }

    async fn post_raw(
        &self,
        path: &str,
        role: &str,
        cookie: Option<&str>,
        form: &[(&str, &str)],
        origin: Option<&str>,
    ) -> (u16, String) {
        let host = self.base.trim_start_matches("http://").to_string();
        let mut request = self
            .client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .header(
                "origin",
                origin.map_or(format!("http://{host}"), str::to_string),
            )
            .body(serde_urlencoded(form));
        if !role.is_empty() {
            request = request.header("x-test-viewer", role);
        }
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_string());
        let body = response.text().await.unwrap();
        (status, location.unwrap_or(body))
    }

    async fn tick(&self) {
        self.jobs.worker().build().unwrap().tick().await.unwrap();
    }
}

fn serde_urlencoded(form: &[(&str, &str)]) -> String {
    form.iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The `rel` (`next` or `prev`) page link of a list page, unescaped.
fn link(page: &str, rel: &str) -> Option<String> {
    let marker = format!("rel=\"{rel}\" href=\"");
    let start = page.find(&marker)? + marker.len();
    let end = start + page[start..].find('"')?;
    Some(
        page[start..end]
            .replace("&amp;", "&")
            .replace("&#x2f;", "/"),
    )
}

fn flaky(id: &str, org: &str) -> Flaky {
    Flaky {
        id: id.into(),
        org: org.into(),
        secret: "hunter2-card-4242".into(),
    }
}

/// What every store must serve: the overview, filters, a job page, a dead job retried from a
/// step and then run, pause and resume, the bulk actions, and a tenant's dashboard seeing only
/// its own jobs.
async fn scenario(driver: Arc<dyn JobDriver>, label: &str) {
    let jobs = Jobs::with_clock(driver, Arc::new(jobs::clock::SystemClock));
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let dead_id = format!("{label}-dead");
    let dead = DashFlaky::enqueue(&jobs, flaky(&dead_id, "acme"))
        .await
        .unwrap();
    let welcome = DashWelcome::enqueue(
        &jobs,
        Welcome {
            user_id: 1,
            org: "globex".into(),
            note: None,
        },
    )
    .await
    .unwrap();
    dash.tick().await;
    assert_eq!(
        jobs.job(dead.id).await.unwrap().unwrap().state,
        JobState::Dead
    );

    // The overview: each queue's depth, the chart from the counters.
    let (status, overview) = dash.get("/admin", "read").await;
    assert_eq!(status, 200, "{overview}");
    assert!(overview.contains("dash-work") && overview.contains("dash-email"));
    assert!(overview.contains("<svg class=\"chart\""), "{overview}");
    assert!(overview.contains("1 done"), "{overview}");

    // Filters: by queue, by state, by name, by tenant.
    let (_, list) = dash.get("/admin/jobs?queue=dash-work", "read").await;
    assert!(list.contains(&dead.id.to_string()));
    assert!(!list.contains(&welcome.id.to_string()));
    let (_, list) = dash.get("/admin/jobs?state=done", "read").await;
    assert!(list.contains(&welcome.id.to_string()) && !list.contains(&dead.id.to_string()));
    let (_, list) = dash.get("/admin/jobs?name=dash_flaky", "read").await;
    assert!(list.contains(&dead.id.to_string()) && !list.contains(&welcome.id.to_string()));
    let (_, list) = dash.get("/admin/jobs?tenant=globex", "read").await;
    assert!(list.contains(&welcome.id.to_string()) && !list.contains(&dead.id.to_string()));
    let (_, dead_letters) = dash.get("/admin/dead", "read").await;
    assert!(dead_letters.contains(&dead.id.to_string()));
    // A filter outside its values is the request's fault: X_INVARIANT, 400.
    let (status, body) = dash.get("/admin/jobs?state=sleepy", "read").await;
    assert_eq!(status, 400);
    assert!(
        body.contains("X_INVARIANT") && !body.contains("X_CLI_BAD_FLAG"),
        "{body}"
    );

    // The job page: state, steps, the last error (escaped), the input redacted.
    let (status, page) = dash.get(&format!("/admin/jobs/{}", dead.id), "read").await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("dead") && page.contains("prepare") && page.contains("charge"));
    assert!(page.contains("&lt;script&gt;"), "{page}");
    assert!(!page.contains("<script>alert"), "{page}");
    assert!(page.contains("&lt;string&gt;") && !page.contains("hunter2"));
    assert!(
        !page.contains("Retry from step"),
        "a reader sees no actions"
    );
    let (_, page) = dash
        .get(&format!("/admin/jobs/{}", dead.id), "manage")
        .await;
    assert!(
        page.contains("<option value=\"charge\" selected>"),
        "the failed step is the one offered first: {page}"
    );

    // Retry from the failed step, then it runs.
    heal(&dead_id);
    let (status, location) = dash
        .post(
            &format!("/admin/jobs/{}/retry", dead.id),
            "manage",
            &[("from_step", "charge")],
        )
        .await;
    assert_eq!(status, 303, "{location}");
    assert_eq!(location, format!("/admin/jobs/{}?note=requeued", dead.id));
    dash.tick().await;
    assert_eq!(
        jobs.job(dead.id).await.unwrap().unwrap().state,
        JobState::Done
    );
    // The job moved on: the note of the retry is gone, the badge alone tells.
    let (_, page) = dash.get(&location, "manage").await;
    assert!(
        !page.contains("Requeued") && page.contains("badge done"),
        "{page}"
    );
    // Its history says who retried it, from which step; a reader sees it too.
    let (_, page) = dash.get(&location, "read").await;
    let history = &page[page.find("<h2>History</h2>").expect("a History section")..];
    assert!(
        history.contains("ops@example.com")
            && history.contains("retried from step <code>charge</code>"),
        "{history}"
    );
    let rows = jobs.operator().history(dead.id).await.unwrap();
    assert_eq!(
        (rows[0].verb.as_str(), rows[0].actor.as_deref()),
        ("requeue_from_step", Some("ops@example.com"))
    );

    // Pause and resume a queue.
    let (status, _) = dash
        .post("/admin/queues/dash-email/pause", "manage", &[])
        .await;
    assert_eq!(status, 303);
    let (_, queues) = dash.get("/admin/queues", "read").await;
    assert!(queues.contains("badge paused"), "{queues}");
    assert!(
        queues.contains("by ops@example.com"),
        "who paused it: {queues}"
    );
    assert_eq!(
        jobs.operator()
            .introspect()
            .unwrap()
            .queue_paused()
            .await
            .unwrap()[0]
            .queue,
        "dash-email"
    );
    let (status, _) = dash
        .post("/admin/queues/dash-email/resume", "manage", &[])
        .await;
    assert_eq!(status, 303);
    assert!(jobs
        .operator()
        .introspect()
        .unwrap()
        .queue_paused()
        .await
        .unwrap()
        .is_empty());

    // Bulk: delete a selection of finished jobs; a refused one is counted, not fatal.
    let extra = DashFlaky::enqueue(&jobs, flaky(&format!("{label}-extra"), "acme"))
        .await
        .unwrap();
    let (dead_s, welcome_s, extra_s) = (
        dead.id.to_string(),
        welcome.id.to_string(),
        extra.id.to_string(),
    );
    let (status, location) = dash
        .post(
            "/admin/jobs/bulk",
            "manage",
            &[("action", "retry"), ("id", &welcome_s), ("id", &extra_s)],
        )
        .await;
    assert_eq!(status, 303);
    assert_eq!(location, "/admin/jobs?note=bulk&ok=1&refused=1");
    let (status, _) = dash
        .post(
            "/admin/jobs/bulk",
            "manage",
            &[("action", "cancel"), ("id", &extra_s), ("id", &welcome_s)],
        )
        .await;
    assert_eq!(status, 303);
    let (_, location) = dash
        .post(
            "/admin/jobs/bulk",
            "manage",
            &[
                ("action", "delete"),
                ("id", &dead_s),
                ("id", &welcome_s),
                ("id", &extra_s),
            ],
        )
        .await;
    assert_eq!(location, "/admin/jobs?note=bulk&ok=3&refused=0");
    assert!(jobs.job(dead.id).await.unwrap().is_none());
    // Each selected job's history has its own row: the cancel, then the delete.
    let rows = jobs.operator().history(extra.id).await.unwrap();
    let acts: Vec<(&str, Option<&str>)> = rows
        .iter()
        .map(|r| (r.verb.as_str(), r.actor.as_deref()))
        .collect();
    assert_eq!(
        acts,
        [
            ("remove", Some("ops@example.com")),
            ("cancel", Some("ops@example.com")),
        ]
    );

    // Keyset pages, older then newer again, keeping the filter.
    let mut ids = Vec::new();
    for n in 0..5 {
        let queued = DashWelcome::enqueue(
            &jobs,
            Welcome {
                user_id: 100 + n,
                org: "paged".into(),
                note: None,
            },
        )
        .await
        .unwrap();
        ids.push(queued.id.to_string());
    }
    ids.reverse(); // newest first, as the list shows them
    let (_, first) = dash.get("/admin/jobs?tenant=paged&limit=2", "read").await;
    assert!(first.contains(&ids[0]) && first.contains(&ids[1]) && !first.contains(&ids[2]));
    assert!(link(&first, "prev").is_none());
    let (_, second) = dash.get(&link(&first, "next").unwrap(), "read").await;
    assert!(second.contains(&ids[2]) && second.contains(&ids[3]) && !second.contains(&ids[1]));
    let (_, third) = dash.get(&link(&second, "next").unwrap(), "read").await;
    assert!(third.contains(&ids[4]) && !third.contains(&ids[3]));
    assert!(link(&third, "next").is_none());
    let (_, back) = dash.get(&link(&third, "prev").unwrap(), "read").await;
    assert!(back.contains(&ids[2]) && back.contains(&ids[3]) && !back.contains(&ids[4]));
    for id in &ids {
        let id = uuid::Uuid::parse_str(id).unwrap();
        jobs.operator().cancel(id).await.unwrap();
        jobs.operator().remove(id).await.unwrap();
    }

    // Tasks: cron in words, pause, resume, run now.
    let (status, tasks) = dash.get("/admin/tasks", "read").await;
    assert_eq!(status, 200, "{tasks}");
    assert!(tasks.contains("dash_digest") && tasks.contains("at 09:00, Monday to Friday"));
    assert!(tasks.contains("Europe&#x2f;Paris"), "{tasks}");
    for action in ["pause", "resume", "run"] {
        let (status, location) = dash
            .post(&format!("/admin/tasks/dash_digest/{action}"), "manage", &[])
            .await;
        assert_eq!(status, 303, "{action}: {location}");
        if action == "pause" {
            assert_eq!(jobs.tasks().paused().await.unwrap(), ["dash_digest"]);
        }
    }
    assert!(jobs.tasks().paused().await.unwrap().is_empty());
    let fired = jobs
        .operator()
        .list_jobs(&jobs::driver::introspect::JobListParams {
            name: Some("dash_welcome".into()),
            tenant_id: Some("initech".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(fired.jobs.len(), 1, "run now enqueued the task's entry");
    let fired = jobs.job(fired.jobs[0].id).await.unwrap().unwrap();
    assert_eq!(
        fired.actor.as_deref(),
        Some("ops@example.com"),
        "who ran the task"
    );

    // Every other page renders on this store.
    for path in [
        "/admin/workers",
        "/admin/backfills",
        "/admin/ledger",
        "/admin/ledger?ledger=cash&key=k1",
        "/admin/manifest",
        "/admin/metrics",
    ] {
        let (status, body) = dash.get(path, "read").await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    // The declared backfills of this binary, with their rails (cli_factories_postgres.rs).
    let (_, body) = dash.get("/admin/backfills", "read").await;
    assert!(
        body.contains("cli.after-migration") && body.contains("20261201093000_add_label"),
        "{body}"
    );

    // A tenant's dashboard: only that tenant's jobs, and another's id is unknown.
    let mine = DashFlaky::enqueue(&jobs, flaky(&format!("{label}-acme"), "acme"))
        .await
        .unwrap();
    let theirs = DashFlaky::enqueue(&jobs, flaky(&format!("{label}-globex"), "globex"))
        .await
        .unwrap();
    let acme = Dash::start(jobs.clone(), DashboardOptions::default().for_tenant("acme")).await;
    let (_, list) = acme.get("/admin/jobs", "read").await;
    assert!(list.contains(&mine.id.to_string()));
    assert!(!list.contains(&theirs.id.to_string()));
    let (_, list) = acme.get("/admin/jobs?tenant=globex", "read").await;
    assert!(!list.contains(&theirs.id.to_string()));
    let (status, _) = acme
        .get(&format!("/admin/jobs/{}", theirs.id), "read")
        .await;
    assert_eq!(status, 404);
    let (status, _) = acme
        .post(&format!("/admin/jobs/{}/cancel", theirs.id), "manage", &[])
        .await;
    assert_eq!(status, 409);
    let (status, _) = acme
        .post(&format!("/admin/jobs/{}/delete", theirs.id), "manage", &[])
        .await;
    assert_eq!(status, 404);
    assert!(jobs.job(theirs.id).await.unwrap().is_some());
    let (status, _) = acme
        .post("/admin/queues/dash-work/pause", "manage", &[])
        .await;
    assert_eq!(
        status, 403,
        "a tenant's dashboard does not pause a shared queue"
    );
    let (status, _) = acme.get("/admin/metrics", "read").await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn on_memory() {
    scenario(Arc::new(jobs::driver::MemoryDriver::new()), "memory").await;
}

#[tokio::test]
async fn on_postgres() {
    scenario(support::pg::driver("dashboard").await, "postgres").await;
}

#[tokio::test]
async fn on_sqlite() {
    scenario(support::sqlite::driver("dashboard").await, "sqlite").await;
}

#[tokio::test]
async fn on_redis() {
    scenario(support::redis::driver("dashboard").await, "redis").await;
}

#[tokio::test]
async fn a_reader_is_refused_every_change_and_a_stranger_everything() {
    let dash = Dash::start(Jobs::memory(), DashboardOptions::default()).await;
    let (status, body) = dash
        .post("/admin/queues/dash-email/pause", "read", &[])
        .await;
    assert_eq!(status, 403);
    assert!(body.contains("X_DASHBOARD_FORBIDDEN"), "{body}");
    assert!(dash
        .jobs
        .operator()
        .introspect()
        .unwrap()
        .queue_paused()
        .await
        .unwrap()
        .is_empty());
    let (status, body) = dash.get("/admin", "other").await;
    assert_eq!(status, 403);
    assert!(body.contains("X_DASHBOARD_FORBIDDEN"));
    let (status, body) = dash.get("/admin", "").await;
    assert_eq!(status, 401);
    assert!(body.contains("X_DASHBOARD_UNAUTHENTICATED"));
    // A reader may not reveal an input.
    let queued = DashFlaky::enqueue(&dash.jobs, flaky("reveal", "acme"))
        .await
        .unwrap();
    let (status, _) = dash
        .get(&format!("/admin/jobs/{}?reveal=1", queued.id), "read")
        .await;
    assert_eq!(status, 403);
    let (status, page) = dash
        .get(&format!("/admin/jobs/{}?reveal=1", queued.id), "manage")
        .await;
    assert_eq!(status, 200);
    assert!(
        page.contains("hunter2-card-4242"),
        "a manager who asks sees the input"
    );
}

/// A kept result (`keep_result`) shows on the job page once the job is done, redacted as the
/// input is; a manager who reveals the input sees it too, a reader may not.
#[tokio::test]
async fn the_job_page_shows_a_kept_result_redacted_until_revealed() {
    let dash = Dash::start(Jobs::memory(), DashboardOptions::default()).await;
    let queued = DashTally::enqueue(&dash.jobs, acme(31)).await.unwrap();
    let path = format!("/admin/jobs/{}", queued.id);
    let (status, page) = dash.get(&path, "read").await;
    assert_eq!(status, 200, "{page}");
    assert!(
        !page.contains("<h2>Result"),
        "nothing kept before it ran: {page}"
    );

    dash.tick().await;
    let row = dash.jobs.job(queued.id).await.unwrap().unwrap();
    assert_eq!(row.state, JobState::Done);
    let (status, page) = dash.get(&path, "read").await;
    assert_eq!(status, 200, "{page}");
    let result = &page[page.find("<h2>Result").expect("a Result section")..];
    assert!(
        result.contains("&lt;number&gt;") && result.contains("&lt;string&gt;"),
        "its shape, redacted: {result}"
    );
    assert!(!page.contains("tok-kept-result-77"), "{page}");

    let (status, _) = dash.get(&format!("{path}?reveal=1"), "read").await;
    assert_eq!(status, 403);
    let (status, page) = dash.get(&format!("{path}?reveal=1"), "manage").await;
    assert_eq!(status, 200, "{page}");
    let result = &page[page.find("<h2>Result").expect("a Result section")..];
    assert!(
        result.contains("tok-kept-result-77"),
        "a manager who asks sees the result: {result}"
    );
}

#[tokio::test]
async fn a_change_without_the_csrf_token_or_from_another_origin_is_refused() {
    let dash = Dash::start(Jobs::memory(), DashboardOptions::default()).await;
    let path = "/admin/queues/dash-email/pause";
    // No token in the form.
    let (status, body) = dash
        .post_raw(path, "manage", Some(&dash.cookie), &[], None)
        .await;
    assert_eq!(status, 403);
    assert!(body.contains("X_DASHBOARD_CSRF"), "{body}");
    // A token, but no cookie to match it.
    let (status, body) = dash
        .post_raw(path, "manage", None, &[("csrf", dash.token())], None)
        .await;
    assert_eq!((status, body.contains("X_DASHBOARD_CSRF")), (403, true));
    // A wrong token.
    let wrong = "0".repeat(64);
    let (status, _) = dash
        .post_raw(
            path,
            "manage",
            Some(&dash.cookie),
            &[("csrf", &wrong)],
            None,
        )
        .await;
    assert_eq!(status, 403);
    // The right token from another origin.
    let (status, body) = dash
        .post_raw(
            path,
            "manage",
            Some(&dash.cookie),
            &[("csrf", dash.token())],
            Some("http://evil.example"),
        )
        .await;
    assert_eq!((status, body.contains("X_DASHBOARD_CSRF")), (403, true));
    assert!(dash
        .jobs
        .operator()
        .introspect()
        .unwrap()
        .queue_paused()
        .await
        .unwrap()
        .is_empty());
    // And a GET changes nothing: there is no GET route for an action.
    let (status, _) = dash.get(path, "manage").await;
    assert_eq!(status, 405);
}

#[tokio::test]
async fn hostile_names_errors_and_inputs_are_escaped() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let hostile = "<script>alert(1)</script>";
    let queued = DashFlaky::enqueue(&jobs, flaky(hostile, hostile))
        .await
        .unwrap();
    // Markup in a tenant and an input, too (a queue cannot hold it: the name grammar refuses
    // such a queue at enqueue).
    DashWelcome::enqueue_with(
        &jobs,
        Welcome {
            user_id: 9,
            org: hostile.into(),
            note: Some("<img src=x onerror=alert(2)>".into()),
        },
        EnqueueOptions::new(),
    )
    .await
    .unwrap();
    let refused = DashWelcome::enqueue_with(
        &jobs,
        Welcome {
            user_id: 10,
            org: hostile.into(),
            note: None,
        },
        EnqueueOptions::new().queue("<img src=x onerror=alert(2)>"),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::JobDeclarationInvalid));
    dash.tick().await;
    for path in [
        "/admin".to_string(),
        "/admin/jobs".to_string(),
        "/admin/dead".to_string(),
        "/admin/queues".to_string(),
        format!("/admin/jobs/{}", queued.id),
        format!("/admin/jobs/{}?reveal=1", queued.id),
        format!("/admin/jobs?tenant={}", encode(hostile)),
    ] {
        let (status, page) = dash.get(&path, "manage").await;
        assert_eq!(status, 200, "{path}: {page}");
        assert!(!page.contains("<script>alert"), "{path}: {page}");
        assert!(!page.contains("<img src=x"), "{path}: {page}");
        // The only scripts are the dashboard's own file.
        assert_eq!(page.matches("<script").count(), 1, "{path}");
    }
    let (_, page) = dash
        .get(&format!("/admin/jobs/{}?reveal=1", queued.id), "manage")
        .await;
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"),
        "{page}"
    );
}

#[tokio::test]
async fn the_job_page_shows_who_retried_and_cancelled_it_escaped() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let queued = DashFlaky::enqueue(&jobs, flaky("history", "acme"))
        .await
        .unwrap();
    dash.tick().await;
    let path = format!("/admin/jobs/{}", queued.id);
    let (_, page) = dash.get(&path, "read").await;
    assert!(page.contains("<h2>History</h2>") && page.contains("enqueued"));
    // Retried by a viewer whose identity is markup, then cancelled by another.
    let (status, _) = dash.post(&format!("{path}/retry"), "hostile", &[]).await;
    assert_eq!(status, 303);
    let (status, _) = dash.post(&format!("{path}/cancel"), "manage", &[]).await;
    assert_eq!(status, 303);
    let (status, page) = dash.get(&path, "read").await;
    assert_eq!(status, 200, "{page}");
    let history = &page[page.find("<h2>History</h2>").unwrap()..];
    let cancelled = history.find("cancelled").expect("the cancel is shown");
    let retried = history.find("retried").expect("the retry is shown");
    assert!(cancelled < retried, "newest first: {history}");
    assert!(history.contains("ops@example.com"), "{history}");
    assert!(
        history.contains("&lt;script&gt;alert(&#x27;who&#x27;)&lt;&#x2f;script&gt;"),
        "the hostile identity is shown, escaped: {history}"
    );
    assert!(!page.contains("<script>alert"), "{page}");
    assert_eq!(
        page.matches("<script").count(),
        1,
        "only the dashboard's own script"
    );
    // Stored whole, as the operator API reads it.
    let rows = jobs.operator().history(queued.id).await.unwrap();
    assert_eq!(
        rows[1].actor.as_deref(),
        Some("<script>alert('who')</script>")
    );
}

#[tokio::test]
async fn the_job_page_shows_dependencies_both_ways() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let first = DashFlaky::enqueue(&jobs, flaky("first", "acme"))
        .await
        .unwrap();
    let after = jobs::EnqueueOptions::new().depends_on([first.id]);
    let then = DashFlaky::enqueue_with(&jobs, flaky("then", "acme"), after)
        .await
        .unwrap();
    let (status, page) = dash.get(&format!("/admin/jobs/{}", then.id), "read").await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<dt>Blocked</dt><dd>until the jobs it depends on have settled</dd>"),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "<dt>Depends on</dt><dd><a href=\"&#x2f;admin/jobs/{id}\"><code>{id}</code></a> <span class=\"badge ready\">ready</span>",
            id = first.id
        )),
        "{page}"
    );
    assert!(page.contains("when one fails: cancel"), "{page}");
    // The workflow graph: both jobs, the shown one outlined, one arrow.
    let graph = &page[page.find("<h2>Workflow</h2>").expect("a workflow card")..];
    assert!(graph.contains("<svg class=\"graph\""), "{graph}");
    assert!(graph.contains("<rect class=\"current\""), "{graph}");
    assert_eq!(graph.matches("<line x1=").count(), 1, "{graph}");
    assert!(graph.contains(">blocked</text>"), "{graph}");
    let (_, page) = dash.get(&format!("/admin/jobs/{}", first.id), "read").await;
    assert!(
        page.contains(&format!(
            "<dt>Dependents</dt><dd><a href=\"&#x2f;admin/jobs/{id}\"><code>{id}</code></a></dd>",
            id = then.id
        )),
        "{page}"
    );
}

#[tokio::test]
async fn the_job_page_shows_parent_children_and_batch() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let parent = DashFlaky::enqueue(&jobs, flaky("parent", "acme"))
        .await
        .unwrap();
    let child = DashFlaky::enqueue(&jobs, flaky("child", "acme"))
        .await
        .unwrap();
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
        .unwrap();
    let (status, page) = dash
        .get(&format!("/admin/jobs/{}", parent.id), "read")
        .await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(&format!(
            "<dt>Children</dt><dd><a href=\"&#x2f;admin/jobs/{id}\"><code>{id}</code></a> <span class=\"badge ready\">ready</span>",
            id = child.id
        )),
        "{page}"
    );
    let graph = &page[page.find("<h2>Workflow</h2>").expect("a workflow card")..];
    assert_eq!(graph.matches("<line x1=").count(), 1, "{graph}");
    let (_, page) = dash.get(&format!("/admin/jobs/{}", child.id), "read").await;
    assert!(
        page.contains(&format!(
            "<dt>Parent</dt><dd><a href=\"&#x2f;admin/jobs/{id}\"><code>{id}</code></a>",
            id = parent.id
        )),
        "{page}"
    );

    let batch = jobs
        .batch::<DashFlaky>(flaky("report", "acme"))
        .await
        .unwrap();
    let members = batch
        .add::<DashFlaky, _>([flaky("m1", "acme"), flaky("m2", "acme")])
        .await
        .unwrap();
    let (_, page) = dash
        .get(&format!("/admin/jobs/{}", members[1].id), "read")
        .await;
    assert!(page.contains("<dt>Batch</dt>"), "{page}");
    assert!(
        page.contains("<progress max=\"2\" value=\"0\"></progress> 0 of 2 settled"),
        "{page}"
    );
    assert!(page.contains("a member, open"), "{page}");
}

#[tokio::test]
async fn the_enqueue_form_follows_the_schema_and_records_the_viewer() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let (status, manifest) = dash.get("/admin/manifest", "manage").await;
    assert_eq!(status, 200);
    assert!(manifest.contains("dash_welcome") && manifest.contains("user_id"));
    let (status, form) = dash.get("/admin/manifest/dash_welcome", "manage").await;
    assert_eq!(status, 200, "{form}");
    assert!(form.contains("name=\"f.user_id\""), "{form}");
    assert!(form.contains("type=\"number\" step=\"1\""), "{form}");
    assert!(form.contains("min=\"0\""), "{form}");
    // A bad field is refused before anything is written, naming the field, not the value.
    let (status, body) = dash
        .post(
            "/admin/manifest/dash_welcome",
            "manage",
            &[("f.user_id", "lots-secret"), ("f.org", "acme")],
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("user_id") && !body.contains("lots-secret"),
        "{body}"
    );
    assert!(dash
        .jobs
        .operator()
        .list_jobs(&Default::default())
        .await
        .unwrap()
        .jobs
        .is_empty());
    let (status, location) = dash
        .post(
            "/admin/manifest/dash_welcome",
            "manage",
            &[("f.user_id", "42"), ("f.org", "acme"), ("f.note", "")],
        )
        .await;
    assert_eq!(status, 303, "{location}");
    assert!(location.ends_with("?note=enqueued"), "{location}");
    let page = jobs
        .operator()
        .list_jobs(&Default::default())
        .await
        .unwrap();
    let row = jobs.job(page.jobs[0].id).await.unwrap().unwrap();
    assert_eq!(row.name, "dash_welcome");
    assert_eq!(row.tenant_id.as_deref(), Some("acme"));
    assert_eq!(row.actor.as_deref(), Some("ops@example.com"));
    let (_, shown) = dash.get(&location, "manage").await;
    assert!(
        shown.contains("ops@example.com"),
        "the job page shows who enqueued it"
    );
    // A reader sees no form link and may not post one.
    let (status, _) = dash
        .post(
            "/admin/manifest/dash_welcome",
            "read",
            &[("f.user_id", "43"), ("f.org", "acme")],
        )
        .await;
    assert_eq!(status, 403);
}

/// The enqueue form offers a priority, the job's declared one chosen, under a name no input
/// field can take; the choice goes into the enqueue's options, and a value out of range or no
/// whole number is refused as the API refuses it (`X_INVARIANT`), naming the fix, before
/// anything is stored.
#[tokio::test]
async fn the_enqueue_form_chooses_a_priority() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let (status, form) = dash.get("/admin/manifest/dash_urgent", "manage").await;
    assert_eq!(status, 200, "{form}");
    assert!(form.contains(r#"name="priority""#), "{form}");
    assert!(
        form.contains(r#"<option value="3" selected>3</option>"#),
        "the declared priority is chosen: {form}"
    );
    assert!(
        form.contains(r#"<option value="5">5 (claimed first)</option>"#)
            && form.contains(r#"<option value="-5">-5 (claimed last)</option>"#),
        "{form}"
    );
    let (_, plain) = dash.get("/admin/manifest/dash_welcome", "manage").await;
    assert!(
        plain.contains(r#"<option value="0" selected>0 (default)</option>"#),
        "{plain}"
    );
    let input = [("f.user_id", "1"), ("f.org", "acme")];
    for bad in ["6", "-6", "urgent-please", "1.5", "99999"] {
        let mut fields = input.to_vec();
        fields.push(("priority", bad));
        let (status, body) = dash
            .post("/admin/manifest/dash_urgent", "manage", &fields)
            .await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.contains("X_INVARIANT"), "{bad}: {body}");
        assert!(
            body.contains("Fix:") && body.contains("-5") && body.contains("claimed first"),
            "{bad}: {body}"
        );
    }
    let (_, body) = dash
        .post(
            "/admin/manifest/dash_urgent",
            "manage",
            &[
                ("f.user_id", "1"),
                ("f.org", "acme"),
                ("priority", "urgent-please"),
            ],
        )
        .await;
    assert!(
        !body.contains("urgent-please"),
        "the value is not repeated: {body}"
    );
    assert!(jobs
        .operator()
        .list_jobs(&Default::default())
        .await
        .unwrap()
        .jobs
        .is_empty());
    // A choice, then none (the declared priority holds).
    for (user, chosen, stored) in [("2", Some("-2"), -2), ("3", None, 3)] {
        let mut fields = vec![("f.user_id", user), ("f.org", "acme")];
        fields.extend(chosen.map(|p| ("priority", p)));
        let (status, location) = dash
            .post("/admin/manifest/dash_urgent", "manage", &fields)
            .await;
        assert_eq!(status, 303, "{location}");
        let id: JobId = location
            .trim_end_matches("?note=enqueued")
            .rsplit('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(jobs.job(id).await.unwrap().unwrap().priority, stored);
    }
}

/// The workers page shows the queue limits each live worker announced, and a queue whose
/// workers run with different ones (or some with none) above the table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workers_page_shows_queue_limits_and_a_disagreement() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let minute = std::time::Duration::from_secs(60);
    let start = |id: &str, limits: Option<jobs::QueueLimits>| {
        let mut builder = jobs.worker().id(id).queues(["dash-email"]);
        if let Some(limits) = limits {
            builder = builder.queue_limits("dash-email", limits);
        }
        builder.build().unwrap().start()
    };
    let same = jobs::QueueLimits::new().concurrency(4).rate(100, minute);
    let a = start("worker-a", Some(same));
    let b = start("worker-b", Some(same));
    let live = |n: usize| {
        let jobs = jobs.clone();
        support::wait::wait_until("the workers' registry rows", move || {
            let jobs = jobs.clone();
            async move { jobs.operator().workers().await.unwrap().len() == n }
        })
    };
    live(2).await;
    let (status, page) = dash.get("/admin/workers", "read").await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("4 in flight, 100 per 1m"), "{page}");
    assert!(
        !page.contains("run with different limits") && !page.contains(">differs<"),
        "two workers with the same limits agree: {page}"
    );
    let c = start("worker-c", Some(jobs::QueueLimits::new().concurrency(8)));
    let d = start("worker-d", None);
    live(4).await;
    let (_, page) = dash.get("/admin/workers", "read").await;
    assert!(
        page.contains("The workers of queue <code>dash-email</code> run with different limits"),
        "{page}"
    );
    assert!(
        page.contains("4 in flight, 100 per 1m: <code>worker-a</code>, <code>worker-b</code>")
            && page.contains("8 in flight: <code>worker-c</code>")
            && page.contains("no limits: <code>worker-d</code>"),
        "{page}"
    );
    assert!(page.contains(">differs<"), "{page}");
    for handle in [a, b, c, d] {
        handle.shutdown().await;
    }
}

#[tokio::test]
async fn every_dead_letter_of_a_queue_is_retried_at_once() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    for n in 0..3 {
        DashFlaky::enqueue(&jobs, flaky(&format!("all-dead-{n}"), "acme"))
            .await
            .unwrap();
    }
    dash.tick().await;
    let (_, page) = dash.get("/admin/dead?queue=dash-work", "manage").await;
    assert!(
        page.contains("Retry every dead letter of queue dash-work"),
        "{page}"
    );
    let (status, location) = dash
        .post(
            "/admin/dead/retry",
            "manage",
            &[("queue", "dash-work"), ("name", "")],
        )
        .await;
    assert_eq!(status, 303);
    assert_eq!(location, "/admin/dead?note=bulk&ok=3&refused=0");
    let (_, page) = dash.get(&location, "manage").await;
    assert!(
        page.contains("3 done, 0 left") && page.contains("No dead letter"),
        "{page}"
    );
}

#[tokio::test]
async fn metrics_are_prometheus_text() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    DashFlaky::enqueue(&jobs, flaky("metrics", "acme"))
        .await
        .unwrap();
    dash.tick().await;
    let response = dash.request("/admin/metrics", "read").send().await.unwrap();
    assert_eq!(response.status(), 200);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    // The Prometheus text format, which a browser shows rather than downloads.
    assert_eq!(kind, "text/plain; version=0.0.4; charset=utf-8");
    let text = response.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    // The queue gauges come from the depth, which leaves the done rows uncounted.
    assert!(!text.contains("state=\"done\""), "{text}");
    let mut samples = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        value
            .parse::<f64>()
            .unwrap_or_else(|_| panic!("not a sample: {line}"));
        let name = series.split('{').next().unwrap();
        assert!(name.starts_with("jobs_"), "{line}");
        assert!(
            name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
            "{line}"
        );
        samples += 1;
    }
    assert!(samples > 0);
    assert!(
        text.contains("jobs_queue_jobs{queue=\"dash-work\",state=\"dead\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("jobs_last_hour_outcomes{job=\"dash_flaky\",outcome=\"dead\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn the_standalone_dashboard_needs_its_credentials() {
    use jobs::dashboard::standalone::{app, check_listen, Credentials};
    let open = Credentials::default();
    let refused = check_listen("0.0.0.0:8080".parse().unwrap(), &open).unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::DashboardListenInsecure));
    assert!(check_listen("127.0.0.1:8080".parse().unwrap(), &open).is_ok());
    assert!(check_listen("[::1]:8080".parse().unwrap(), &open).is_ok());
    let credentials = Credentials {
        token: Some("manage-token".into()),
        read_token: Some("read-token".into()),
        basic: Some(("ops".into(), "pw".into())),
    };
    assert!(check_listen("0.0.0.0:8080".parse().unwrap(), &credentials).is_ok());
    assert!(!format!("{credentials:?}").contains("manage-token"));
    let addr = serve(app(Jobs::memory(), DashboardOptions::default(), credentials).unwrap()).await;
    let client = reqwest::Client::new();
    let get = |auth: Option<String>| {
        let mut request = client.get(format!("http://{addr}/queues"));
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        request.send()
    };
    let response = get(None).await.unwrap();
    assert_eq!(response.status(), 401);
    assert!(response.headers().contains_key("www-authenticate"));
    assert_eq!(
        get(Some("Bearer wrong".into())).await.unwrap().status(),
        401
    );
    assert_eq!(
        get(Some("Bearer manage-token".into()))
            .await
            .unwrap()
            .status(),
        200
    );
    // ops:pw
    assert_eq!(
        get(Some("Basic b3BzOnB3".into())).await.unwrap().status(),
        200
    );
    let page = get(Some("Bearer read-token".into()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("class=\"who\">token</span> <span class=\"role\">read</span>"),
        "{page}"
    );
    // The operator tool refuses before it connects anywhere.
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = jobs::cli::run(
        [
            "jobs",
            "dashboard",
            "--listen",
            "0.0.0.0:0",
            "--database-url",
            "postgres://127.0.0.1:1/none",
        ],
        &mut out,
        &mut err,
    )
    .await;
    let err = String::from_utf8(err).unwrap();
    if std::env::var_os("JOBS_DASHBOARD_TOKEN").is_none()
        && std::env::var_os("JOBS_DASHBOARD_READ_TOKEN").is_none()
        && std::env::var_os("JOBS_DASHBOARD_USER").is_none()
    {
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("X_DASHBOARD_LISTEN_INSECURE"), "{err}");
    }
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

#[tokio::test]
async fn the_operator_tool_serves_the_dashboard_over_a_sqlite_file() {
    if std::env::var_os("JOBS_DASHBOARD_TOKEN").is_some()
        || std::env::var_os("JOBS_DASHBOARD_READ_TOKEN").is_some()
        || std::env::var_os("JOBS_DASHBOARD_USER").is_some()
    {
        return; // the tool would (rightly) ask this test for credentials
    }
    let dir = support::sqlite::TempDir::new("dashboard_cli");
    let url = dir.url();
    let jobs = Jobs::open(&url).await.unwrap();
    let queued = DashWelcome::enqueue(&jobs, acme(5)).await.unwrap();
    let out = Captured::default();
    let mut tool_out = out.clone();
    let tool_url = url.clone();
    // The tool serves until its process ends: it runs on a thread of its own, left to the
    // test process's exit.
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut err = Vec::new();
        let args = [
            "jobs",
            "dashboard",
            "--listen",
            "127.0.0.1:0",
            "--database-url",
            &tool_url,
        ];
        runtime.block_on(jobs::cli::run(args, &mut tool_out, &mut err));
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
    let base = listening(&out).unwrap();
    let page = reqwest::get(format!("{base}jobs/{}", queued.id))
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let page = page.text().await.unwrap();
    assert!(
        page.contains("dash_welcome")
            && page.contains("class=\"who\">local</span> <span class=\"role\">manage</span>"),
        "{page}"
    );
    drop(dir);
}

/// A cookie and a form field a script made up, equal to each other, are refused whether or not
/// the request says where it comes from: only a token the dashboard signed counts.
#[tokio::test]
async fn a_made_up_csrf_pair_is_refused_with_and_without_origin() {
    let dash = Dash::start(Jobs::memory(), DashboardOptions::default()).await;
    let path = "/admin/queues/dash-email/pause";
    let shaped = format!("{}.{}", "a".repeat(32), "b".repeat(64));
    let hex = "0".repeat(64);
    for made_up in [shaped.as_str(), hex.as_str()] {
        let cookie = format!("jobs_dashboard_csrf={made_up}");
        // From our own origin.
        let (status, body) = dash
            .post_raw(path, "manage", Some(&cookie), &[("csrf", made_up)], None)
            .await;
        assert_eq!(status, 403, "{body}");
        assert!(body.contains("X_DASHBOARD_CSRF"), "{body}");
        assert!(!body.contains(made_up), "the token never shows: {body}");
        // With no Origin at all, as a script sends it.
        let response = dash
            .client
            .post(format!("{}{path}", dash.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-test-viewer", "manage")
            .header("cookie", &cookie)
            .body(serde_urlencoded(&[("csrf", made_up)]))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403);
        let body = response.text().await.unwrap();
        assert!(body.contains("X_DASHBOARD_CSRF"), "{body}");
        assert!(body.contains("reload the dashboard page"), "{body}");
    }
    // Another viewer's signed token is not this viewer's.
    let theirs = dash.cookie_for("hostile").await;
    let token = theirs.split_once('=').unwrap().1;
    let (status, _) = dash
        .post_raw(path, "manage", Some(&theirs), &[("csrf", token)], None)
        .await;
    assert_eq!(status, 403);
    assert!(dash
        .jobs
        .operator()
        .introspect()
        .unwrap()
        .queue_paused()
        .await
        .unwrap()
        .is_empty());
    // The signed token, with and without Origin, passes.
    let response = dash
        .client
        .post(format!("{}{path}", dash.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-test-viewer", "manage")
        .header("cookie", &dash.cookie)
        .body(serde_urlencoded(&[("csrf", dash.token())]))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
}

/// The table row of `page` that holds `id`.
fn row_of<'a>(page: &'a str, id: &str) -> &'a str {
    let row = &page[page.find(id).expect("the id is listed")..];
    &row[..row.find("</tr>").expect("the row ends")]
}

/// The jobs and dead-letter lists show each failure's message beside its code, cut short and
/// escaped; the job's page shows the whole of it.
#[tokio::test]
async fn the_lists_show_each_error_message_shortened_and_escaped() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let wordy = DashWordy::enqueue(
        &jobs,
        Wordy {
            id: "w1".into(),
            org: "acme".into(),
        },
    )
    .await
    .unwrap();
    let dead = DashFlaky::enqueue(&jobs, flaky("listed", "acme"))
        .await
        .unwrap();
    dash.tick().await;
    let (status, list) = dash.get("/admin/jobs?queue=dash-wordy", "read").await;
    assert_eq!(status, 200, "{list}");
    let row = row_of(&list, &wordy.id.to_string());
    assert!(
        row.contains("&lt;script&gt;alert(&#x27;w1&#x27;)&lt;&#x2f;script&gt; upstream timed out"),
        "the message, escaped: {row}"
    );
    assert!(row.contains('…'), "cut short: {row}");
    assert!(!row.contains("the tail end</span>"), "{row}");
    assert!(!list.contains("<script>alert"), "{list}");
    // An ordinary failure of a dead letter shows its message, not "-".
    let (_, dead_list) = dash.get("/admin/dead", "read").await;
    let row = row_of(&dead_list, &dead.id.to_string());
    assert!(
        row.contains("&lt;script&gt;alert(&#x27;listed&#x27;)&lt;&#x2f;script&gt; declined"),
        "{row}"
    );
    // The job's page holds it whole.
    let (_, page) = dash.get(&format!("/admin/jobs/{}", wordy.id), "read").await;
    assert!(page.contains("the tail end"), "{page}");
}

/// A retryable error's text shows once on the job's page: under Last error, with the failed
/// step pointing there.
#[tokio::test]
async fn a_retryable_error_shows_once_on_the_job_page() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let wordy = DashWordy::enqueue(
        &jobs,
        Wordy {
            id: "once".into(),
            org: "acme".into(),
        },
    )
    .await
    .unwrap();
    dash.tick().await;
    let row = jobs.job(wordy.id).await.unwrap().unwrap();
    assert!(row.last_error.is_some(), "the attempt failed");
    let (status, page) = dash.get(&format!("/admin/jobs/{}", wordy.id), "read").await;
    assert_eq!(status, 200);
    assert_eq!(page.matches("upstream timed out").count(), 1, "{page}");
    assert!(page.contains("see the last error"), "{page}");
}

/// The note an action leaves ("Requeued: due now.") is shown while it is true, and not once
/// the job moved on.
#[tokio::test]
async fn the_requeued_note_goes_once_the_job_moved_on() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let queued = DashFlaky::enqueue(&jobs, flaky("moved-on", "acme"))
        .await
        .unwrap();
    dash.tick().await;
    let path = format!("/admin/jobs/{}", queued.id);
    heal("moved-on");
    let (status, location) = dash.post(&format!("{path}/retry"), "manage", &[]).await;
    assert_eq!(status, 303);
    assert!(location.ends_with("?note=requeued"), "{location}");
    let (_, page) = dash.get(&location, "manage").await;
    assert!(page.contains("Requeued: due now."), "{page}");
    assert!(page.contains("badge ready"), "{page}");
    dash.tick().await;
    let (_, page) = dash.get(&location, "manage").await;
    assert!(page.contains("badge done"), "{page}");
    assert!(
        !page.contains("Requeued"),
        "the note would contradict the badge: {page}"
    );
}

/// Error pages are pages of the dashboard: its stylesheet, its navigation (for a viewer), the
/// code, the message, the fix, and a way back.
#[tokio::test]
async fn error_pages_have_the_layout_and_a_way_back() {
    let dash = Dash::start(Jobs::memory(), DashboardOptions::default()).await;
    let unknown = "/admin/jobs/00000000-0000-7000-8000-000000000000";
    let bad = "/admin/jobs?state=bogus";
    for (path, role, status, code) in [
        ("/admin/jobs", "", 401, "X_DASHBOARD_UNAUTHENTICATED"),
        ("/admin/jobs", "other", 403, "X_DASHBOARD_FORBIDDEN"),
        (
            "/admin/manifest/dash_welcome",
            "read",
            403,
            "X_DASHBOARD_FORBIDDEN",
        ),
        (unknown, "read", 404, "X_JOB_NOT_FOUND"),
        (bad, "read", 400, "X_INVARIANT"),
    ] {
        let response = dash
            .request(path, role)
            .header("cookie", &dash.cookie)
            .header("referer", format!("{}/admin/queues", dash.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), status, "{path}");
        let kind = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(kind.starts_with("text/html"), "{path}: {kind}");
        // minijinja writes `/` in a value as `&#x2f;`.
        let page = response.text().await.unwrap().replace("&#x2f;", "/");
        assert!(page.contains(code), "{path}: {page}");
        assert!(
            page.contains("/admin/assets/dashboard.css"),
            "styled: {page}"
        );
        assert!(page.contains("class=\"refusal\""), "{page}");
        assert!(page.contains("Fix:"), "every refusal names its fix: {page}");
        assert!(
            page.contains("href=\"/admin\""),
            "a way to the overview: {page}"
        );
        assert!(
            page.contains("href=\"/admin/queues\""),
            "back where it came from: {page}"
        );
        // Who is refused sees no navigation; a viewer does.
        assert_eq!(
            page.contains("aria-label=\"pages\""),
            role == "read",
            "{path}"
        );
    }
    // A foreign Referer is no way back.
    let (_, page) = dash.get(unknown, "read").await;
    assert!(!page.contains("&larr; Back"), "{page}");
    let response = dash
        .request(unknown, "read")
        .header("referer", "http://evil.example/admin/queues")
        .send()
        .await
        .unwrap();
    let page = response.text().await.unwrap();
    assert!(!page.contains("evil.example"), "{page}");
}

/// A reader opening the enqueue form by its URL is refused with the words its post would get.
#[tokio::test]
async fn a_reader_is_refused_the_enqueue_form() {
    let dash = Dash::start(Jobs::memory(), DashboardOptions::default()).await;
    let (status, form) = dash.get("/admin/manifest/dash_welcome", "read").await;
    assert_eq!(status, 403);
    let (post_status, post) = dash
        .post(
            "/admin/manifest/dash_welcome",
            "read",
            &[("f.user_id", "1"), ("f.org", "acme")],
        )
        .await;
    assert_eq!(post_status, 403);
    let words = "may look but not act: acting needs the manage role";
    assert!(
        form.contains(words) && post.contains(words),
        "{form}\n{post}"
    );
    assert!(!form.contains("name=\"f.user_id\""), "no form: {form}");
    // The manifest page offers a reader no Enqueue link either.
    let (_, manifest) = dash.get("/admin/manifest", "read").await;
    assert!(
        !manifest.contains("/admin/manifest/dash_welcome"),
        "{manifest}"
    );
}

/// An empty required text field, or one of blanks, and an input whose tenant comes out empty
/// are refused before anything is stored.
#[tokio::test]
async fn an_empty_required_field_or_tenant_is_refused() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    for org in ["", "   "] {
        let (status, body) = dash
            .post(
                "/admin/manifest/dash_welcome",
                "manage",
                &[("f.user_id", "5"), ("f.org", org)],
            )
            .await;
        assert_eq!(status, 422, "{body}");
        assert!(body.contains("X_JOB_INPUT_INVALID"), "{body}");
        assert!(body.contains("`org`") && body.contains("fill in"), "{body}");
    }
    // A tenant read from elsewhere in the input (a nested field) that comes out empty.
    let (status, body) = dash
        .post(
            "/admin/manifest/dash_invite",
            "manage",
            &[("f.team", r#"{"name": ""}"#), ("f.email", "a@example.com")],
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("X_JOB_TENANT_MISMATCH"), "{body}");
    assert!(
        body.contains("names an empty one") && body.contains("Fix:"),
        "{body}"
    );
    // The form itself asks the browser for more than blanks.
    let (_, form) = dash.get("/admin/manifest/dash_welcome", "manage").await;
    assert!(form.contains("pattern=\".*\\S.*\""), "{form}");
    assert!(jobs
        .operator()
        .list_jobs(&Default::default())
        .await
        .unwrap()
        .jobs
        .is_empty());
}

#[tokio::test]
async fn the_job_and_manifest_pages_show_a_declared_rate() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let queued = DashRated::enqueue(&jobs, acme(9)).await.unwrap();
    let (status, page) = dash
        .get(&format!("/admin/jobs/{}", queued.id), "read")
        .await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<dt>Rate limit</dt><dd>at most 3 starts per 90s per key, this run's key <code>acme</code></dd>"),
        "{page}"
    );
    let (status, page) = dash.get("/admin/manifest", "read").await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("· at most 3 starts per 90s per key"),
        "{page}"
    );
    // A job with no rate shows none.
    let plain = DashWelcome::enqueue(&jobs, acme(9)).await.unwrap();
    let (_, page) = dash.get(&format!("/admin/jobs/{}", plain.id), "read").await;
    assert!(!page.contains("Rate limit"), "{page}");
}

#[tokio::test]
async fn the_job_and_manifest_pages_show_a_debounce_a_unique_period_and_an_expiry() {
    let jobs = Jobs::memory();
    let dash = Dash::start(jobs.clone(), DashboardOptions::default()).await;
    let queued = DashDebounced::enqueue(&jobs, acme(9)).await.unwrap();
    let (status, page) = dash
        .get(&format!("/admin/jobs/{}", queued.id), "read")
        .await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<dt>Debounce</dt><dd>5s: "), "{page}");
    assert!(page.contains("<dt>Expires</dt><dd>"), "{page}");
    assert!(page.contains("expires_in 1h)"), "{page}");
    assert!(page.contains("<dt>Unique</dt><dd>for 1h, until "), "{page}");
    assert!(
        page.contains("an enqueue of its key answers this job, finished or not"),
        "{page}"
    );
    let (status, page) = dash.get("/admin/manifest", "read").await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("· debounce 5s · unique for 1h · expires in 1h"),
        "{page}"
    );
    let plain = DashWelcome::enqueue(&jobs, acme(9)).await.unwrap();
    let (_, page) = dash.get(&format!("/admin/jobs/{}", plain.id), "read").await;
    assert!(
        !page.contains("<dt>Debounce</dt>") && !page.contains("<dt>Expires</dt>"),
        "{page}"
    );
}
