//! The transactional outbox's measurements, each beside its physical reference in the same run:
//!
//! - `stage`: what staging adds to a caller's Postgres transaction. Three kinds of
//!   transaction, interleaved: the business INSERT alone; it and a bare INSERT of a row as wide
//!   as a staged one (the reference); it and a staged job (`enqueue_in` through the outbox).
//! - `relay`: the relay's throughput from a Postgres outbox into each job store (memory, SQLite,
//!   Postgres in another schema, Redis), beside a direct `enqueue_many` of as many jobs in
//!   batches of the relay's size into the same store; and from a memory outbox into memory (the
//!   relay's own pace, no database under the outbox).
//! - `latency`: from a staged job's COMMIT to its start on a worker of a Postgres job store, the
//!   relay and the worker each woken by their store's wake.
//! - `idle`: the claims an idle relay makes a minute, with the wake and without.
//!
//! ```text
//! cargo run --release -p jobs-examples --bin bench-outbox              # all
//! cargo run --release -p jobs-examples --bin bench-outbox -- relay     # some
//! ```
//!
//! Postgres is `DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`), in
//! scratch schemas dropped at the end. Redis is `REDIS_URL`, or a `redis-server` this run
//! starts on a free loopback port (AOF, `appendfsync everysec`) and stops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use jobs::driver::postgres::PostgresOutbox;
use jobs::driver::{
    JobDriver, MemoryDriver, MemoryOutbox, PostgresDriver, RedisDriver, SqliteDriver,
};
use jobs::outbox::{OutboxMode, OutboxRelay, DEFAULT_OUTBOX_BATCH};
use jobs::prelude::*;
use jobs::sqlx::postgres::{PgPool, PgPoolOptions};
use jobs::testing::OutboxProbe;

const RUNS: usize = 3;
const STAGE_TXS: usize = 2_000;
const RELAY_JOBS: u64 = 20_000;
const LATENCY_SAMPLES: u64 = 200;
const IDLE_SECS: u64 = 60;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Order {
    bench: String,
    n: u64,
}

#[job(key = "order:{bench}:{n}", tenant = none, queue = "outbox_bench")]
async fn outbox_bench_order(_run: Run, input: Order) -> Result<(), JobError> {
    if let Some(started) = STARTED.get() {
        started.lock().unwrap().insert(input.n, Instant::now());
    }
    Ok(())
}

/// When each latency sample's job started, by its `n`.
static STARTED: OnceLock<Mutex<HashMap<u64, Instant>>> = OnceLock::new();

fn order(bench: &str, n: u64) -> Order {
    Order {
        bench: bench.to_string(),
        n,
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn range(xs: &[f64]) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(0.0, f64::max);
    format!("{:.0} [{lo:.0}-{hi:.0}]", median(xs.to_vec()))
}

struct Postgres {
    pool: PgPool,
    url: String,
    schemas: Mutex<Vec<String>>,
}

impl Postgres {
    async fn connect() -> Postgres {
        let url = std::env::var("DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        let pool = PgPoolOptions::new()
            .max_connections(20)
            .connect(&url)
            .await
            .expect("DATABASE_URL answers");
        Postgres {
            pool,
            url,
            schemas: Mutex::new(Vec::new()),
        }
    }

    /// A fresh schema with the jobs' migrations (x_outbox among them).
    async fn schema(&self, what: &str) -> (PostgresDriver, String) {
        let name = format!(
            "bench_outbox_{what}_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let driver = PostgresDriver::new(self.pool.clone(), &name).unwrap();
        driver.migrate().await.expect("migrate");
        self.schemas.lock().unwrap().push(name.clone());
        (driver, name)
    }

    async fn drop_schemas(&self) {
        let schemas: Vec<String> = self.schemas.lock().unwrap().drain(..).collect();
        for schema in schemas {
            jobs::sqlx::raw_sql(jobs::sqlx::AssertSqlSafe(format!(
                "drop schema if exists {schema} cascade"
            )))
            .execute(&self.pool)
            .await
            .ok();
        }
    }
}

/// Staging's cost in a caller's transaction, beside a bare INSERT of a row as wide.
async fn stage(pg: &Postgres) {
    println!("## stage: {STAGE_TXS} transactions per kind and run, {RUNS} runs, interleaved");
    let (_, schema) = pg.schema("stage").await;
    jobs::sqlx::raw_sql(jobs::sqlx::AssertSqlSafe(format!(
        "create table {schema}.orders (id bigint primary key, body text not null);
         create table {schema}.bare (id uuid primary key, run_id uuid not null, name text not null,
             queue text not null, input jsonb not null, idempotency_key text not null,
             max_attempts int not null, run_at timestamptz not null, on_conflict text not null,
             traceparent text, staged_at timestamptz not null);"
    )))
    .execute(&pg.pool)
    .await
    .unwrap();
    let outbox = PostgresOutbox::new(pg.pool.clone(), &schema).unwrap();
    let jobs = Jobs::new(MemoryDriver::new()).with_outbox(outbox, OutboxMode::Required);
    let business = format!("insert into {schema}.orders (id, body) values ($1, 'an order')");
    let bare = format!(
        "insert into {schema}.bare values ($1, $2, 'outbox_bench_order', 'outbox_bench', $3,
         $4, 3, now(), 'dedupe', $5, now())"
    );
    let mut rates: HashMap<&str, Vec<f64>> = HashMap::new();
    let mut next = 0_i64;
    for _ in 0..RUNS {
        for kind in ["business alone", "+ bare INSERT", "+ staged job"] {
            let start = Instant::now();
            for _ in 0..STAGE_TXS {
                next += 1;
                let mut tx = pg.pool.begin().await.unwrap();
                jobs::sqlx::query(jobs::sqlx::AssertSqlSafe(business.clone()))
                    .bind(next)
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                match kind {
                    "+ bare INSERT" => {
                        jobs::sqlx::query(jobs::sqlx::AssertSqlSafe(bare.clone()))
                            .bind(uuid::Uuid::now_v7())
                            .bind(uuid::Uuid::now_v7())
                            .bind(serde_json::json!({ "bench": "stage", "n": next }))
                            .bind(format!("order:stage:{next}"))
                            .bind("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
                            .execute(&mut *tx)
                            .await
                            .unwrap();
                    }
                    "+ staged job" => {
                        OutboxBenchOrder::enqueue_in(&jobs, &mut tx, order("stage", next as u64))
                            .await
                            .unwrap();
                    }
                    _ => {}
                }
                tx.commit().await.unwrap();
            }
            rates
                .entry(kind)
                .or_default()
                .push(STAGE_TXS as f64 / start.elapsed().as_secs_f64());
        }
    }
    let alone = median(rates["business alone"].clone());
    println!("| transaction | commits/s | µs a transaction | added to the business one |");
    println!("|---|---|---|---|");
    for kind in ["business alone", "+ bare INSERT", "+ staged job"] {
        let m = median(rates[kind].clone());
        println!(
            "| {kind} | {} | {:.0} | {:+.0} µs |",
            range(&rates[kind]),
            1e6 / m,
            1e6 / m - 1e6 / alone
        );
    }
}

/// Stages `n` orders in the Postgres outbox, 500 a transaction.
async fn stage_many(pg: &Postgres, jobs: &Jobs, bench: &str, n: u64) {
    let mut next = 0;
    while next < n {
        let mut tx = pg.pool.begin().await.unwrap();
        for _ in 0..500.min(n - next) {
            OutboxBenchOrder::enqueue_in(jobs, &mut tx, order(bench, next))
                .await
                .unwrap();
            next += 1;
        }
        tx.commit().await.unwrap();
    }
}

const TARGETS: [&str; 4] = ["memory", "sqlite", "postgres", "redis"];

/// A fresh job store of kind `name`.
async fn target(pg: &Postgres, redis_url: &str, name: &str) -> Arc<dyn JobDriver> {
    match name {
        "memory" => Arc::new(MemoryDriver::new()),
        "sqlite" => {
            let file = std::env::temp_dir()
                .join(format!("bench-outbox-{}.db", uuid::Uuid::new_v4().simple()));
            let sqlite = SqliteDriver::connect(&format!("sqlite://{}", file.display()))
                .await
                .unwrap();
            sqlite.migrate().await.unwrap();
            Arc::new(sqlite)
        }
        "postgres" => Arc::new(pg.schema("target").await.0),
        _ => {
            let prefix = format!(
                "bench_outbox_{}",
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            );
            Arc::new(
                RedisDriver::connect(&format!("{redis_url}/?prefix={prefix}"))
                    .await
                    .expect("Redis answers"),
            )
        }
    }
}

/// The relay's drain rate into each store beside a direct `enqueue_many` into it.
async fn relay(pg: &Postgres, redis_url: &str) {
    println!(
        "## relay: {RELAY_JOBS} staged jobs drained by one relay (batches of {DEFAULT_OUTBOX_BATCH}) \
         beside {RELAY_JOBS} direct enqueue_many of {DEFAULT_OUTBOX_BATCH}, {RUNS} runs"
    );
    println!("| job store | relay jobs/s | direct enqueue_many jobs/s | ratio |");
    println!("|---|---|---|---|");
    for name in TARGETS {
        let (mut relayed, mut direct) = (Vec::new(), Vec::new());
        for run in 0..RUNS {
            // A fresh store a run, so each run inserts into the same size of table.
            let target = target(pg, redis_url, name).await;
            let (_, schema) = pg.schema("relay").await;
            let outbox = PostgresOutbox::new(pg.pool.clone(), &schema).unwrap();
            let jobs = Jobs::with_clock(target, Arc::new(jobs::clock::SystemClock))
                .with_outbox(outbox.clone(), OutboxMode::Optional);
            let bench = format!("{name}-{run}");
            stage_many(pg, &jobs, &bench, RELAY_JOBS).await;
            let relay = OutboxRelay::builder(outbox, &jobs).build().unwrap();
            relayed.push(relay_rate(&relay).await);
            direct.push(direct_rate(&jobs, &format!("{name}-{run}-direct")).await);
        }
        row(name, &relayed, &direct);
    }
    memory_to_memory().await;
}

/// The relay's own pace, with no database under the outbox: a memory outbox into a memory job
/// store, beside a direct `enqueue_many` into that store.
async fn memory_to_memory() {
    let (mut relayed, mut direct) = (Vec::new(), Vec::new());
    for run in 0..RUNS {
        let outbox = MemoryOutbox::new();
        let jobs = Jobs::with_clock(
            Arc::new(MemoryDriver::new()),
            Arc::new(jobs::clock::SystemClock),
        )
        .with_outbox(outbox.clone(), OutboxMode::Optional);
        let bench = format!("memory-outbox-{run}");
        let mut tx = outbox.begin();
        for n in 0..RELAY_JOBS {
            OutboxBenchOrder::enqueue_in(&jobs, &mut tx, order(&bench, n))
                .await
                .unwrap();
        }
        tx.commit();
        let relay = OutboxRelay::builder(outbox, &jobs).build().unwrap();
        relayed.push(relay_rate(&relay).await);
        direct.push(direct_rate(&jobs, &format!("{bench}-direct")).await);
    }
    row(
        "memory, from a memory outbox (no database under it)",
        &relayed,
        &direct,
    );
}

/// Drains the outbox (`RELAY_JOBS` staged rows) with `relay`; answers jobs a second.
async fn relay_rate(relay: &OutboxRelay) -> f64 {
    let start = Instant::now();
    let mut published = 0;
    loop {
        let drained = relay.drain().await.unwrap();
        if drained.claimed == 0 {
            break;
        }
        published += drained.published;
    }
    assert_eq!(published as u64, RELAY_JOBS);
    published as f64 / start.elapsed().as_secs_f64()
}

/// One row of the relay's table.
fn row(store: &str, relayed: &[f64], direct: &[f64]) {
    println!(
        "| {store} | {} | {} | {:.2}x |",
        range(relayed),
        range(direct),
        median(relayed.to_vec()) / median(direct.to_vec())
    );
}

/// Enqueues `RELAY_JOBS` orders straight into the job store in batches of the relay's size;
/// answers jobs a second.
async fn direct_rate(jobs: &Jobs, bench: &str) -> f64 {
    let start = Instant::now();
    let mut n = 0;
    while n < RELAY_JOBS {
        let batch: Vec<Order> = (n..(n + DEFAULT_OUTBOX_BATCH as u64).min(RELAY_JOBS))
            .map(|i| order(bench, i))
            .collect();
        n += batch.len() as u64;
        OutboxBenchOrder::enqueue_many(jobs, batch).await.unwrap();
    }
    RELAY_JOBS as f64 / start.elapsed().as_secs_f64()
}

/// From a staged job's COMMIT to its start, the relay and a worker each on their wake.
async fn latency(pg: &Postgres) {
    println!(
        "## latency: {LATENCY_SAMPLES} staged jobs, one every 20 ms, Postgres outbox and job store"
    );
    STARTED.get_or_init(Default::default);
    let (target, schema) = pg.schema("latency").await;
    let outbox = PostgresOutbox::new(pg.pool.clone(), &schema).unwrap();
    let jobs = Jobs::new(target).with_outbox(outbox.clone(), OutboxMode::Required);
    let relay = OutboxRelay::builder(outbox, &jobs).build().unwrap();
    let worker = jobs
        .worker()
        .queues(["outbox_bench"])
        .outbox_relay(relay)
        .build()
        .unwrap()
        .start();
    // Let both wakes prove themselves before the first sample.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut committed = HashMap::new();
    for n in 0..LATENCY_SAMPLES {
        let mut tx = pg.pool.begin().await.unwrap();
        OutboxBenchOrder::enqueue_in(&jobs, &mut tx, order("latency", n))
            .await
            .unwrap();
        tx.commit().await.unwrap();
        committed.insert(n, Instant::now());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while STARTED.get().unwrap().lock().unwrap().len() < LATENCY_SAMPLES as usize
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    worker.shutdown().await;
    let started = STARTED.get().unwrap().lock().unwrap();
    let mut ms: Vec<f64> = committed
        .iter()
        .filter_map(|(n, at)| {
            started
                .get(n)
                .map(|s| s.duration_since(*at).as_secs_f64() * 1e3)
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    let pct = |p: f64| ms[((ms.len() as f64 * p) as usize).min(ms.len() - 1)];
    println!(
        "stage COMMIT to start: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms ({} of {LATENCY_SAMPLES} started)",
        pct(0.5),
        pct(0.95),
        ms[ms.len() - 1],
        ms.len()
    );
}

/// The claims an idle relay makes a minute, with its wake and without.
async fn idle(pg: &Postgres) {
    println!("## idle: claims in {IDLE_SECS} s after a minute of settling, one relay each");
    let mut probes = Vec::new();
    let mut handles = Vec::new();
    for wake in [true, false] {
        let (target, schema) = pg.schema("idle").await;
        let probe = OutboxProbe::new(PostgresOutbox::new(pg.pool.clone(), &schema).unwrap());
        let probe = if wake { probe } else { probe.without_wake() };
        let jobs = Jobs::new(target);
        handles.push(
            OutboxRelay::builder(probe.clone(), &jobs)
                .build()
                .unwrap()
                .start(),
        );
        probes.push((wake, probe));
    }
    // The backoff doubles from 200 ms to its ceiling within the first seconds.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let before: Vec<usize> = probes.iter().map(|(_, p)| p.claims()).collect();
    tokio::time::sleep(Duration::from_secs(IDLE_SECS)).await;
    for ((wake, probe), before) in probes.iter().zip(before) {
        let per_minute = (probe.claims() - before) as f64 * 60.0 / IDLE_SECS as f64;
        println!(
            "| {} | {per_minute:.0} claims a minute (one statement each) |",
            if *wake {
                "with the wake (LISTEN)"
            } else {
                "without a wake"
            }
        );
    }
    for handle in handles {
        handle.stop(Duration::from_secs(5)).await;
    }
}

/// `REDIS_URL`, or a server of this run's own on a free loopback port.
fn redis() -> (String, Option<std::process::Child>) {
    if let Ok(url) = std::env::var("REDIS_URL") {
        return (url, None);
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(format!("bench-outbox-redis-{port}"));
    std::fs::create_dir_all(&dir).unwrap();
    let child = std::process::Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .args(["--appendonly", "yes", "--appendfsync", "everysec", "--dir"])
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("redis-server on the PATH, or REDIS_URL");
    let url = format!("redis://127.0.0.1:{port}");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (url, Some(child))
}

#[tokio::main]
async fn main() {
    let chosen: Vec<String> = std::env::args().skip(1).collect();
    let runs = |name: &str| chosen.is_empty() || chosen.iter().any(|c| c == name);
    let pg = Postgres::connect().await;
    println!(
        "# bench-outbox: Postgres {}",
        pg.url.split('@').next_back().unwrap_or("")
    );
    if runs("stage") {
        stage(&pg).await;
    }
    if runs("relay") {
        let (url, mut server) = redis();
        relay(&pg, &url).await;
        if let Some(server) = server.as_mut() {
            server.kill().ok();
            server.wait().ok();
        }
    }
    if runs("latency") {
        latency(&pg).await;
    }
    if runs("idle") {
        idle(&pg).await;
    }
    pg.drop_schemas().await;
}
