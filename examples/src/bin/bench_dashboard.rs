//! The dashboard on a big queue: 1,000,000 jobs in a fresh Postgres schema, the router served
//! on 127.0.0.1, and each page timed over real HTTP (median and max of 20 GETs after 3 warm-ups).
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1/postgres cargo run --release -p jobs-examples --bin bench-dashboard
//! ```
//!
//! The rows are enqueued with `enqueue_many` (batches of 5,000, five job names on four queues,
//! three tenants and tenant-less jobs), then settled by one SQL update rather than by a worker,
//! which would take an hour: 90% done, 2% dead, 1% failed, 1% cancelled, 5% ready, 1% due
//! later, a hundred running. Creation times are spread over the last week, each finished row
//! settled within 2 s of it, and the throughput counters the overview charts are written from
//! the finished rows of the last day. Then `VACUUM ANALYZE`, as autovacuum would have done on a
//! table this old. The schema is dropped at the end.

use std::time::{Duration, Instant};

use jobs::dashboard::axum::{self, extract::Request, middleware::Next, response::Response};
use jobs::dashboard::{DashboardOptions, Viewer};
use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe, PgPool};

const SCHEMA: &str = "bench_dashboard";
const JOBS: u64 = 1_000_000;
const BATCH: u64 = 5_000;
const WARMUPS: usize = 3;
const SAMPLES: usize = 20;
const TENANTS: [&str; 3] = ["acme", "globex", "initech"];

#[derive(Serialize, Deserialize, JsonSchema)]
struct Order {
    order_id: u64,
    org: String,
    amount_cents: u64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Asset {
    asset_id: u64,
    width: u32,
}

#[job(key = "email:{order_id}", tenant = org, queue = "email")]
async fn send_receipt(_run: Run, _input: Order) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "charge:{order_id}", tenant = org, queue = "billing")]
async fn charge_card(_run: Run, _input: Order) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "crm:{order_id}", tenant = org)]
async fn sync_crm(_run: Run, _input: Order) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "resize:{asset_id}", tenant = none, queue = "media")]
async fn resize_image(_run: Run, _input: Asset) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "thumb:{asset_id}", tenant = none, queue = "media")]
async fn thumbnail(_run: Run, _input: Asset) -> Result<(), JobError> {
    Ok(())
}

fn url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

async fn exec(pool: &PgPool, sql: &str) {
    sqlx::query(AssertSqlSafe(sql.to_string()))
        .execute(pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn order(n: u64) -> Order {
    Order {
        order_id: n,
        org: TENANTS[(n % 3) as usize].to_string(),
        amount_cents: 100 + n % 9_900,
    }
}

fn asset(n: u64) -> Asset {
    Asset {
        asset_id: n,
        width: 320 + (n % 4) as u32 * 320,
    }
}

/// 1,000,000 rows by `enqueue_many`, batch `b` of one job name in a 3:2:2:2:1 mix.
async fn fill(jobs: &Jobs) -> Result<(), JobError> {
    for b in 0..JOBS / BATCH {
        let ns = b * BATCH..(b + 1) * BATCH;
        match b % 10 {
            0..=2 => drop(jobs.enqueue_many::<SendReceipt, _>(ns.map(order)).await?),
            3 | 4 => drop(jobs.enqueue_many::<ChargeCard, _>(ns.map(order)).await?),
            5 | 6 => drop(jobs.enqueue_many::<SyncCrm, _>(ns.map(order)).await?),
            7 | 8 => drop(jobs.enqueue_many::<ResizeImage, _>(ns.map(asset)).await?),
            _ => drop(jobs.enqueue_many::<Thumbnail, _>(ns.map(asset)).await?),
        }
    }
    Ok(())
}

/// Settles the rows by SQL (see the module's comment) in one statement, a fixed share per
/// state picked by a hash of the id so the states interleave along every index. The counters a
/// worker's settles would have moved are written from the settled rows.
async fn settle(pool: &PgPool) {
    let s = SCHEMA;
    exec(
        pool,
        &format!(
            "update {s}.x_jobs j set
                 created_at = v.created,
                 run_at = case when v.b = 99 then now() + interval '1 hour' else v.created end,
                 state = case when v.b < 90 then 'done'
                              when v.b < 92 then 'dead'
                              when v.b = 92 then 'failed'
                              when v.b = 93 then 'cancelled'
                              when v.b = 94 and v.r = 0 then 'running'
                              when v.b = 99 then 'delayed'
                              else 'ready' end,
                 attempt = case when v.b in (90, 91) then j.max_attempts
                                when v.b < 93 or (v.b = 94 and v.r = 0) then 1
                                else 0 end,
                 claims = case when v.b < 93 or (v.b = 94 and v.r = 0) then 1 else 0 end,
                 started_at = case when v.b < 93 or (v.b = 94 and v.r = 0) then v.created end,
                 updated_at = case when v.b < 93 then v.created + v.took else v.created end,
                 last_error = case when v.b between 90 and 92
                                   then 'upstream answered 503 Service Unavailable' end,
                 last_error_code = case when v.b between 90 and 92 then 'X_JOB_FAILED' end,
                 claimed_by = case when v.b = 94 and v.r = 0 then 'bench' end,
                 visible_at = case when v.b = 94 and v.r = 0 then now() + interval '5 minutes' end
             from (select id,
                          abs(hashtext(id::text)) % 100 as b,
                          abs(hashtext(id::text || 'r')) % 100 as r,
                          now() - random() * interval '7 days' as created,
                          random() * interval '2 seconds' as took
                   from {s}.x_jobs) v
             where j.id = v.id"
        ),
    )
    .await;
    exec(
        pool,
        &format!(
            "insert into {s}.x_job_counters
                 (name, width_secs, bucket, done, retried, failed, dead, duration_ms)
             select name, 60, to_timestamp(floor(extract(epoch from updated_at) / 60) * 60),
                    count(*) filter (where state = 'done'), 0,
                    count(*) filter (where state = 'failed'),
                    count(*) filter (where state = 'dead'),
                    sum(floor(extract(epoch from (updated_at - started_at)) * 1000))::bigint
             from {s}.x_jobs
             where state in ('done', 'failed', 'dead') and updated_at > now() - interval '1 day'
             group by 1, 3"
        ),
    )
    .await;
    exec(pool, &format!("vacuum analyze {s}.x_jobs")).await;
    exec(pool, &format!("vacuum analyze {s}.x_job_counters")).await;
}

/// Every request is the operator with the manage role, as an app's login layer would say.
async fn operator(mut request: Request, next: Next) -> Response {
    request
        .extensions_mut()
        .insert(Viewer::new("bench@example.com", ["job:manage"]));
    next.run(request).await
}

/// The first `after=` cursor in a page: the link to the next, older page.
fn older_cursor(html: &str) -> Option<String> {
    let start = html.find("after=")? + "after=".len();
    let rest = &html[start..];
    let end = rest.find(['"', '&'])?;
    Some(rest[..end].to_string())
}

async fn get(client: &reqwest::Client, url: &str) -> (Duration, String) {
    let started = Instant::now();
    let response = client.get(url).send().await.expect("GET");
    let status = response.status();
    let body = response.text().await.expect("body");
    let took = started.elapsed();
    assert!(status.is_success(), "{url}: {status}\n{body}");
    (took, body)
}

/// Median and max of `SAMPLES` GETs of `url`, after `WARMUPS` untimed ones.
async fn time(client: &reqwest::Client, url: &str) -> (f64, f64, String) {
    let mut body = String::new();
    for _ in 0..WARMUPS {
        body = get(client, url).await.1;
    }
    let mut ms = Vec::new();
    for _ in 0..SAMPLES {
        ms.push(get(client, url).await.0.as_secs_f64() * 1000.0);
    }
    ms.sort_by(|a, b| a.total_cmp(b));
    (ms[ms.len() / 2], ms[ms.len() - 1], body)
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    // BENCH_DASHBOARD_KEEP=1 keeps the filled schema at the end and reuses it on the next run
    // (to EXPLAIN a page's statements against it).
    let keep = std::env::var_os("BENCH_DASHBOARD_KEEP").is_some();
    let driver = PostgresDriver::connect(&url()).await?.with_schema(SCHEMA)?;
    let pool = driver.pool().clone();
    let filled: Option<i64> = sqlx::query_scalar(AssertSqlSafe(format!(
        "select count(*) from {SCHEMA}.x_jobs"
    )))
    .fetch_one(&pool)
    .await
    .ok();
    let reuse = keep && filled == Some(JOBS as i64);
    if !reuse {
        exec(&pool, &format!("drop schema if exists {SCHEMA} cascade")).await;
    }
    driver.migrate().await?;
    let version: String = sqlx::query_scalar("show server_version")
        .fetch_one(&pool)
        .await
        .expect("version");
    let jobs = Jobs::new(driver);

    let started = Instant::now();
    if !reuse {
        fill(&jobs).await?;
    }
    let enqueued = started.elapsed();
    if !reuse {
        settle(&pool).await;
    }
    let settled = started.elapsed() - enqueued;
    let states: Vec<(String, i64)> = sqlx::query_as(AssertSqlSafe(format!(
        "select state, count(*) from {SCHEMA}.x_jobs group by 1 order by 2 desc"
    )))
    .fetch_all(&pool)
    .await
    .expect("states");
    println!(
        "Postgres {version}: {JOBS} jobs enqueued in {:.1} s (batches of {BATCH}), settled and vacuumed in {:.1} s",
        enqueued.as_secs_f64(),
        settled.as_secs_f64()
    );
    println!(
        "  {}",
        states
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );

    let app = axum::Router::new()
        .nest(
            "/admin",
            jobs::dashboard::router(jobs.clone(), DashboardOptions::default())?,
        )
        .layer(axum::middleware::from_fn(operator));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}/admin", listener.local_addr().expect("addr"));
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();

    let mut pages: Vec<(String, String)> = vec![
        ("overview".into(), base.clone()),
        ("jobs, first page".into(), format!("{base}/jobs")),
        (
            "jobs, queue billing + state dead".into(),
            format!("{base}/jobs?queue=billing&state=dead"),
        ),
        (
            "jobs, name + tenant".into(),
            format!("{base}/jobs?name=sync_crm&tenant=globex"),
        ),
        (
            "jobs, state ready".into(),
            format!("{base}/jobs?state=ready"),
        ),
        ("dead letters".into(), format!("{base}/dead")),
    ];
    // Five keyset steps into the unfiltered list, following each page's "older" link.
    let mut url = format!("{base}/jobs");
    for _ in 0..5 {
        let body = get(&client, &url).await.1;
        let cursor = older_cursor(&body).expect("an older page");
        url = format!("{base}/jobs?after={cursor}");
    }
    pages.push(("jobs, 6th page (after a cursor)".into(), url));

    println!("\n| page | median ms | max ms |\n| --- | ---: | ---: |");
    for (what, url) in &pages {
        let (median, max, body) = time(&client, url).await;
        assert!(body.contains("</html>"), "{what}: not a whole page");
        println!("| {what} | {median:.1} | {max:.1} |");
    }

    server.abort();
    if !keep {
        exec(&pool, &format!("drop schema if exists {SCHEMA} cascade")).await;
    }
    Ok(())
}
