//! The benchmark suite: one table, each figure the median of several runs, beside the bare
//! INSERTs of the same run as the physical reference.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1/postgres cargo run --release -p jobs-examples --bin bench
//! cargo run --release -p jobs-examples --bin bench -- e2e pickup      # some scenarios only
//! ```
//!
//! Scenarios: `enqueue` (single, interleaved with a bare single-row INSERT on a plain
//! connection), `bulk` (interleaved with a bare 1,000-row INSERT), `pool` (the bare INSERT
//! through a sqlx pool),
//! `e2e` (no-op jobs, pre-filled queue of 20,000, 16 slots), `e2e-steps` (the same with a
//! 3-step job), `pickup` (from another process, 200 enqueues 50 ms apart, beside the same
//! protocol done with bare statements: INSERT+NOTIFY, LISTEN, UPDATE), `idle` (claims per
//! idle minute per worker), `claim` (latency with 10 vs 1,000,000 ready rows), `memory` (the
//! memory driver's end-to-end throughput), `retention` (end-to-end after 1,000,000 done rows),
//! `ontime` (how late an idle worker starts a delayed job, a retry after its backoff and a
//! parked sleep, written by another client with its own pool, and its claims meanwhile),
//! `spans` (a parent fanning out to 1,000 children and in again, and a batch of 10,000 with its
//! callback, each beside the same jobs enqueued in bulk and drained plain), `export` (export
//! and import of 200,000 rows, rows/s, beside `COPY`, the keyset `SELECT` and the bare upsert).
//! `BENCH_RUNS` sets the runs per figure (3).

use std::time::{Duration, Instant};

use jobs::driver::{ClaimParams, JobDriver, NackParams, NackTarget, PostgresDriver, QueueDemand};
use jobs::prelude::*;
use jobs::sqlx::postgres::{PgConnection, PgListener};
use jobs::sqlx::{self, AssertSqlSafe, Connection, PgPool};

#[path = "../bench_export.rs"]
mod bench_export;
#[path = "../bench_on_time.rs"]
mod bench_on_time;
#[path = "../bench_spans.rs"]
mod spans;
use bench_on_time::{KIND_PARK, KIND_RETRY, ON_TIME_JOBS};

/// Runs per figure (each figure is their median): `BENCH_RUNS`, 3 by default.
fn runs() -> usize {
    std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(3)
}
const SLOTS: u32 = 16;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Item {
    bench: String,
    n: u64,
}

#[job(key = "noop:{bench}:{n}", tenant = none)]
async fn noop(_run: Run, _input: Item) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "steps:{bench}:{n}", tenant = none)]
async fn three_steps(run: Run, input: Item) -> Result<(), JobError> {
    let a: u64 = run.step("a", async { Ok::<_, JobError>(input.n) }).await?;
    let b: u64 = run
        .step("b", async move { Ok::<_, JobError>(a + 1) })
        .await?;
    run.step("c", async move { Ok::<_, JobError>(b + 1) })
        .await?;
    Ok(())
}

/// A child that keeps its result, for the fan-out and the batch: records when its body ended.
#[job(key = "leaf:{bench}:{n}", tenant = none, keep_result)]
async fn leaf(_run: Run, input: Item) -> Result<u64, JobError> {
    spans::child_ended();
    Ok(input.n)
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Spread {
    bench: String,
    n: u64,
    children: u64,
}

/// Invokes `children` leaves and awaits them all: records when it resumed.
#[job(key = "fan:{bench}:{n}", tenant = none)]
async fn fan(run: Run, input: Spread) -> Result<(), JobError> {
    let bench = format!("{}-{}", input.bench, input.n);
    let leaves = (0..input.children).map(|n| Item {
        bench: bench.clone(),
        n,
    });
    let outcomes = run.invoke_all(Leaf, leaves).await?;
    spans::parent_resumed();
    let settled = outcomes.iter().filter(|o| o.is_ok()).count() as u64;
    if settled != input.children {
        return Err(JobError::terminal("a leaf failed"));
    }
    Ok(())
}

/// A batch's callback: records when it ran.
#[job(key = "tally:{bench}:{n}", tenant = none)]
async fn batch_tally(_run: Run, _input: Item) -> Result<(), JobError> {
    spans::parent_resumed();
    Ok(())
}

fn url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

fn bench_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// A fresh schema (dropped first) with the migrations applied.
async fn fresh(schema: &str) -> Result<PostgresDriver, JobError> {
    let driver = PostgresDriver::connect(&url()).await?.with_schema(schema)?;
    exec(
        driver.pool(),
        &format!("drop schema if exists {schema} cascade"),
    )
    .await;
    driver.migrate().await?;
    Ok(driver)
}

async fn exec(pool: &PgPool, sql: &str) {
    sqlx::query(AssertSqlSafe(sql.to_string()))
        .execute(pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn rate(n: usize, took: Duration) -> f64 {
    n as f64 / took.as_secs_f64()
}

struct Table {
    rows: Vec<(String, String)>,
}

impl Table {
    fn add(&mut self, what: &str, value: String) {
        println!("  {what}: {value}");
        self.rows.push((what.to_string(), value));
    }
}

/// A plain connection with a fresh `bench_bare` table: the physical reference, as pgbench runs
/// it (no pool, no health check).
async fn bare_table() -> PgConnection {
    let mut conn = PgConnection::connect(&url()).await.expect("connect");
    exec_on(&mut conn, "drop table if exists bench_bare").await;
    exec_on(
        &mut conn,
        "create table bench_bare (id uuid primary key, payload jsonb not null, at timestamptz not null)",
    )
    .await;
    conn
}

async fn bare_insert(conn: &mut PgConnection, n: u64) {
    sqlx::query("insert into bench_bare (id, payload, at) values ($1, $2, now())")
        .bind(uuid::Uuid::now_v7())
        .bind(serde_json::json!({ "bench": "bare", "n": n }))
        .execute(conn)
        .await
        .expect("insert");
}

/// A job's row written straight into the driver's `x_jobs` in `schema` (no dedupe, no wake,
/// nothing read back): what the table and its indexes cost one commit, the schema's own floor.
async fn job_row_insert(conn: &mut PgConnection, sql: &str, bench: &str, n: u64) {
    sqlx::query(AssertSqlSafe(sql.to_string()))
        .bind(uuid::Uuid::now_v7())
        .bind(serde_json::json!({ "bench": bench, "n": n }))
        .bind(format!("row:{bench}:{n}"))
        .execute(conn)
        .await
        .expect("insert");
}

/// One 1,000-row INSERT whose ids and JSON payloads come from the client, as a job's do.
async fn bare_insert_1000(conn: &mut PgConnection, batch: u64) {
    let ids: Vec<uuid::Uuid> = (0..1_000).map(|_| uuid::Uuid::now_v7()).collect();
    let payloads: Vec<serde_json::Value> = (0..1_000)
        .map(|i| serde_json::json!({ "bench": "bare", "n": batch * 1_000 + i }))
        .collect();
    sqlx::query(
        "insert into bench_bare (id, payload, at)
         select id, payload, now() from unnest($1::uuid[], $2::jsonb[]) as u(id, payload)",
    )
    .bind(ids)
    .bind(payloads)
    .execute(conn)
    .await
    .expect("bulk insert");
}

/// A bare single-row INSERT through a sqlx pool, beside the plain connection's: what a pool's
/// checkout and return (sqlx pings every connection it takes back) add per statement.
async fn pooled_inserts(table: &mut Table) {
    drop(bare_table().await);
    let pool = PgPool::connect(&url()).await.expect("connect");
    let mut rates = Vec::new();
    for _ in 0..runs() {
        let n = 2_000;
        let started = Instant::now();
        for i in 0..n {
            sqlx::query("insert into bench_bare (id, payload, at) values ($1, $2, now())")
                .bind(uuid::Uuid::now_v7())
                .bind(serde_json::json!({ "bench": "bare", "n": i }))
                .execute(&pool)
                .await
                .expect("insert");
        }
        rates.push(rate(n as usize, started.elapsed()));
    }
    table.add(
        "bare single-row INSERT through a sqlx pool /s",
        format!("{:.0}", median(rates)),
    );
}

/// Times `bare` and `ours` in alternating blocks of `block` calls (each given its call's
/// number), `blocks` times over, so both see the same machine: answers the time each took.
async fn interleave(
    blocks: u64,
    block: u64,
    mut bare: impl AsyncFnMut(u64),
    mut ours: impl AsyncFnMut(u64) -> Result<(), JobError>,
) -> Result<(Duration, Duration), JobError> {
    let (mut bare_took, mut ours_took) = (Duration::ZERO, Duration::ZERO);
    for b in 0..blocks {
        let started = Instant::now();
        for i in 0..block {
            bare(b * block + i).await;
        }
        bare_took += started.elapsed();
        let started = Instant::now();
        for i in 0..block {
            ours(b * block + i).await?;
        }
        ours_took += started.elapsed();
    }
    Ok((bare_took, ours_took))
}

/// Medians over the runs of the bare rate, our rate and their ratio, from each run's timings
/// of `n` calls of each.
struct Compared {
    bare: Vec<f64>,
    ours: Vec<f64>,
    ratios: Vec<f64>,
}

impl Compared {
    fn new() -> Self {
        Compared {
            bare: Vec::new(),
            ours: Vec::new(),
            ratios: Vec::new(),
        }
    }

    fn push(&mut self, n: usize, (bare, ours): (Duration, Duration)) {
        self.bare.push(rate(n, bare));
        self.ours.push(rate(n, ours));
        self.ratios.push(bare.as_secs_f64() / ours.as_secs_f64());
    }

    /// Adds the medians; the ratio also shows its range over the runs, since a target is met
    /// only when every run meets it.
    fn report(self, table: &mut Table, bare_label: &str, ours_label: &str) {
        table.add(bare_label, format!("{:.0}", median(self.bare)));
        let low = self.ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let high = self.ratios.iter().copied().fold(0.0, f64::max);
        table.add(
            ours_label,
            format!(
                "{:.0} ({:.2}x; runs {low:.2}x-{high:.2}x)",
                median(self.ours),
                median(self.ratios)
            ),
        );
    }
}

/// Sequential single enqueues, interleaved with the bare single-row INSERT in blocks of 100;
/// then a job's row inserted straight into the same `x_jobs`, interleaved with the bare INSERT
/// the same way; then the enqueue interleaved with that row, the ratio to the schema's floor.
async fn single_enqueue(table: &mut Table) -> Result<(), JobError> {
    let mut compared = Compared::new();
    let mut floor = Compared::new();
    let mut to_floor = Compared::new();
    let schema = "bench_enqueue";
    let job_row = format!(
        "insert into {schema}.x_jobs (id, run_id, name, queue, input, idempotency_key, state,
             max_attempts, run_at, created_at, updated_at)
         values ($1, $1, 'noop', 'default', $2, $3, 'ready', 25, now(), now(), now())"
    );
    for _ in 0..runs() {
        let jobs = Jobs::new(fresh(schema).await?);
        let mut conn = bare_table().await;
        let mut rows = PgConnection::connect(&url()).await.expect("connect");
        let bench = bench_id();
        let took = interleave(
            20,
            100,
            async |n| bare_insert(&mut conn, n).await,
            async |n| {
                job_row_insert(&mut rows, &job_row, &bench, n).await;
                Ok(())
            },
        )
        .await?;
        floor.push(2_000, took);
        let took = interleave(
            20,
            100,
            async |n| bare_insert(&mut conn, n).await,
            async |n| {
                let item = Item {
                    bench: bench.clone(),
                    n,
                };
                Noop::enqueue(&jobs, item).await.map(drop)
            },
        )
        .await?;
        compared.push(2_000, took);
        // Keys of their own, so the enqueues below find no holder among the rows above.
        let floor_bench = format!("{bench}-floor");
        let took = interleave(
            20,
            100,
            async |n| job_row_insert(&mut rows, &job_row, &floor_bench, n).await,
            async |n| {
                let item = Item {
                    bench: floor_bench.clone(),
                    n,
                };
                Noop::enqueue(&jobs, item).await.map(drop)
            },
        )
        .await?;
        to_floor.push(2_000, took);
    }
    compared.report(
        table,
        "bare single-row INSERT /s",
        "single enqueue /s (x the bare INSERT, interleaved)",
    );
    table.add(
        "job row INSERT into the driver's x_jobs /s (x the bare INSERT): the schema's floor",
        format!("{:.0} ({:.2}x)", median(floor.ours), median(floor.ratios)),
    );
    to_floor.report(
        table,
        "job row INSERT into x_jobs /s, interleaved with the enqueue below",
        "single enqueue /s (x the job row INSERT, interleaved): against the floor",
    );
    Ok(())
}

/// One 1,000-row batch of job rows made in the server (`generate_series`, time-ordered ids as
/// a job's are) into the full `x_jobs` of `schema`: the schema's floor for a bulk enqueue, as
/// pgbench's server-made batch is the bare table's.
async fn server_batch_1000(conn: &mut PgConnection, schema: &str, bench: &str, batch: u64) {
    sqlx::query(AssertSqlSafe(format!(
        "insert into {schema}.x_jobs (id, run_id, name, queue, input, idempotency_key, state,
             max_attempts, run_at, created_at, updated_at)
         select u.id, u.id, 'noop', 'default', jsonb_build_object('bench', $1::text, 'n', u.n),
                'noop:' || $1 || ':' || u.n, 'ready', 25, now(), now(), now()
         from (
             select ($2::bigint * 1000 + g) as n,
                    (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::bigint), 12, '0')
                     || '7' || substr(md5(random()::text), 1, 19))::uuid as id
             from generate_series(0, 999) g
         ) u"
    )))
    .bind(bench)
    .bind(batch as i64)
    .execute(conn)
    .await
    .expect("server batch");
}

/// `enqueue_many` in batches of 1,000, interleaved with the bare 1,000-row INSERT in blocks
/// of 5 batches; then interleaved the same way with the server-made batch into the same
/// `x_jobs`, the ratio to the schema's floor.
async fn bulk_enqueue(table: &mut Table) -> Result<(), JobError> {
    let mut compared = Compared::new();
    let mut to_floor = Compared::new();
    let schema = "bench_bulk";
    for _ in 0..runs() {
        let jobs = Jobs::new(fresh(schema).await?);
        let mut conn = bare_table().await;
        let mut rows = PgConnection::connect(&url()).await.expect("connect");
        let bench = bench_id();
        let many = async |bench: &str, batch: u64| {
            let inputs = (0..1_000).map(|k| Item {
                bench: bench.to_string(),
                n: batch * 1_000 + k,
            });
            Noop::enqueue_many(&jobs, inputs).await.map(drop)
        };
        let took = interleave(
            10,
            5,
            async |batch| bare_insert_1000(&mut conn, batch).await,
            async |batch| many(&bench, batch).await,
        )
        .await?;
        compared.push(50_000, took);
        let floor_bench = format!("{bench}-floor");
        let server_bench = format!("{bench}-server");
        let took = interleave(
            10,
            5,
            async |batch| server_batch_1000(&mut rows, schema, &server_bench, batch).await,
            async |batch| many(&floor_bench, batch).await,
        )
        .await?;
        to_floor.push(50_000, took);
    }
    compared.report(
        table,
        "bare 1,000-row INSERT rows/s",
        "bulk enqueue /s, batches of 1,000 (x the bare INSERT, interleaved)",
    );
    to_floor.report(
        table,
        "server-made 1,000-row batch into x_jobs rows/s, interleaved with the bulk enqueue below",
        "bulk enqueue /s (x the server-made batch into x_jobs, interleaved): against the floor",
    );
    Ok(())
}

async fn exec_on(conn: &mut PgConnection, sql: &str) {
    sqlx::query(AssertSqlSafe(sql.to_string()))
        .execute(conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Pre-fills `total` jobs, then times one worker (16 slots) draining them.
async fn drain<J: Job<Input = Item>>(jobs: &Jobs, total: u64) -> Result<f64, JobError> {
    let bench = bench_id();
    for chunk in 0..total.div_ceil(5_000) {
        let inputs = (chunk * 5_000..((chunk + 1) * 5_000).min(total)).map(|n| Item {
            bench: bench.clone(),
            n,
        });
        jobs.enqueue_many::<J, _>(inputs).await?;
    }
    let worker = jobs.worker().concurrency(SLOTS).build()?;
    let started = Instant::now();
    let running = worker.start();
    let deadline = Instant::now() + Duration::from_secs(300);
    // Looked at every millisecond: the memory driver drains 20,000 in about 100 ms, and each
    // look can add up to its period to the time measured (5 ms before 2026-12-04).
    while worker.stats().completed < total && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let took = started.elapsed();
    running.shutdown().await;
    Ok(rate(worker.stats().completed as usize, took))
}

async fn end_to_end<J: Job<Input = Item>>(
    table: &mut Table,
    label: &str,
    schema: &str,
) -> Result<(), JobError> {
    let mut rates = Vec::new();
    for _ in 0..runs() {
        let jobs = Jobs::new(fresh(schema).await?);
        rates.push(drain::<J>(&jobs, 20_000).await?);
    }
    table.add(label, format!("{:.0}", median(rates)));
    Ok(())
}

/// A chain of 100 no-op jobs, each enqueued depending on the one before (`depends_on`),
/// beside the same 100 enqueued plain: what naming a dependency costs an enqueue, and how fast
/// a chain runs end to end, where every stage waits for the one before to settle, be judged by
/// the release pass and be claimed.
async fn dependency_chain(table: &mut Table) -> Result<(), JobError> {
    const LENGTH: u64 = 100;
    let (mut plain, mut dependent, mut chained) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs() {
        let jobs = Jobs::new(fresh("bench_chain").await?);
        let bench = bench_id();
        let started = Instant::now();
        for n in 0..LENGTH {
            let item = Item {
                bench: format!("{bench}-plain"),
                n,
            };
            jobs.enqueue::<Noop>(item).await?;
        }
        plain.push(rate(LENGTH as usize, started.elapsed()));
        let jobs = Jobs::new(fresh("bench_chain").await?);
        let started = Instant::now();
        let mut before = None;
        for n in 0..LENGTH {
            let options = match before {
                Some(id) => EnqueueOptions::new().depends_on([id]),
                None => EnqueueOptions::new(),
            };
            let item = Item {
                bench: bench.clone(),
                n,
            };
            before = Some(jobs.enqueue_with::<Noop>(item, options).await?.id);
        }
        dependent.push(rate(LENGTH as usize, started.elapsed()));
        let worker = jobs.worker().concurrency(SLOTS).build()?;
        let started = Instant::now();
        let running = worker.start();
        let deadline = Instant::now() + Duration::from_secs(120);
        while worker.stats().completed < LENGTH && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let took = started.elapsed();
        running.shutdown().await;
        chained.push(rate(worker.stats().completed as usize, took));
    }
    let (plain, dependent, chained) = (median(plain), median(dependent), median(chained));
    table.add(
        "enqueue naming one dependency /s",
        format!(
            "{dependent:.0} ({:.2}x a plain single enqueue, {plain:.0}/s, in the same run)",
            dependent / plain
        ),
    );
    table.add(
        "100-job dependency chain end to end /s",
        format!("{chained:.0} ({:.1} ms a stage)", 1_000.0 / chained),
    );
    Ok(())
}

async fn memory_end_to_end(table: &mut Table) -> Result<(), JobError> {
    let mut rates = Vec::new();
    for _ in 0..runs() {
        let jobs = Jobs::memory();
        rates.push(drain::<Noop>(&jobs, 20_000).await?);
    }
    table.add(
        "memory driver end-to-end /s",
        format!("{:.0}", median(rates)),
    );
    Ok(())
}

/// A UUIDv7-shaped id for row `g` of a bulk fill: time-ordered like the ids the client makes
/// (`Uuid::now_v7`), so the fill's index entries land where real ones would.
const V7_ID: &str = "(lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::bigint - 2000000 + g), 12, '0')
     || '7' || substr(md5(random()::text), 1, 3) || '8' || substr(md5(random()::text), 1, 15))::uuid";

/// Claim latency with `backlog` ready rows: 300 claims of 10, each handed straight back.
async fn claim_latency(backlog: usize) -> Result<f64, JobError> {
    let schema = format!("bench_claim_{backlog}");
    let driver = fresh(&schema).await?;
    exec(
        driver.pool(),
        &format!(
            "insert into {schema}.x_jobs (id, run_id, name, queue, input, idempotency_key, state,
                 max_attempts, run_at, created_at, updated_at)
             select {V7_ID}, {V7_ID}, 'noop', 'default', '{{}}'::jsonb,
                    'k' || g, 'ready', 3, now() - interval '1 minute', now(), now()
             from generate_series(1, {backlog}) g",
            V7_ID = V7_ID,
        ),
    )
    .await;
    exec(driver.pool(), &format!("analyze {schema}.x_jobs")).await;
    let mut timings = Vec::new();
    for _ in 0..300 {
        let now = chrono::Utc::now();
        let started = Instant::now();
        let claimed = driver
            .job_claim(&ClaimParams {
                demand: vec![QueueDemand {
                    queue: "default".into(),
                    limit: 10,
                }],
                worker_id: "bench".into(),
                visibility_timeout: Duration::from_secs(30),
                drop_exhausted: Vec::new(),
                fair_after: String::new(),
                now,
            })
            .await?;
        timings.push(started.elapsed().as_secs_f64() * 1000.0);
        for job in claimed.jobs {
            driver
                .job_nack(&NackParams {
                    job_id: job.id,
                    by: job.by,
                    target: NackTarget::Retry,
                    run_at: now,
                    counts_as_attempt: false,
                    error: None,
                    error_code: None,
                    now,
                })
                .await?;
        }
    }
    exec(driver.pool(), &format!("drop schema {schema} cascade")).await;
    Ok(median(timings))
}

async fn claims(table: &mut Table) -> Result<(), JobError> {
    let ten = claim_latency(10).await?;
    let million = claim_latency(1_000_000).await?;
    table.add(
        "claim of 10, p50 ms: 10 ready / 1,000,000 ready",
        format!("{ten:.2} / {million:.2} ({:.2}x)", million / ten),
    );
    Ok(())
}

/// End-to-end throughput after 1,000,000 jobs completed (kept by the retention window).
async fn retention(table: &mut Table) -> Result<(), JobError> {
    let schema = "bench_retention";
    let driver = fresh(schema).await?;
    exec(
        driver.pool(),
        &format!(
            "insert into {schema}.x_jobs (id, run_id, name, queue, input, idempotency_key, state,
                 attempt, max_attempts, run_at, created_at, updated_at)
             select {V7_ID}, {V7_ID}, 'noop', 'default', '{{}}'::jsonb,
                    'done' || g, 'done', 1, 3, now() - interval '1 hour', now(), now()
             from generate_series(1, 1000000) g",
            V7_ID = V7_ID,
        ),
    )
    .await;
    exec(driver.pool(), &format!("analyze {schema}.x_jobs")).await;
    let jobs = Jobs::new(driver);
    let after = drain::<Noop>(&jobs, 20_000).await?;
    table.add(
        "end-to-end /s with 1,000,000 done rows kept",
        format!("{after:.0}"),
    );
    Ok(())
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Sent {
    bench: String,
    n: u64,
    sent_at_us: u128,
}

type Latencies = std::sync::Mutex<Vec<f64>>;

fn wall_us() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros()
}

#[job(key = "ping:{bench}:{n}", tenant = none, queue = "pings")]
async fn ping(run: Run, input: Sent) -> Result<(), JobError> {
    let latency = wall_us().saturating_sub(input.sent_at_us) as f64 / 1000.0;
    run.context::<Latencies>()?
        .lock()
        .expect("latencies")
        .push(latency);
    Ok(())
}

const PINGS: u64 = 200;

/// The child process of `pickup`: enqueues 200 pings, 50 ms apart.
async fn send_pings(schema: &str) -> Result<(), JobError> {
    let jobs = Jobs::new(PostgresDriver::connect(&url()).await?.with_schema(schema)?);
    let bench = bench_id();
    for n in 0..PINGS {
        let sent = Sent {
            bench: bench.clone(),
            n,
            sent_at_us: wall_us(),
        };
        Ping::enqueue(&jobs, sent).await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Pickup latency of an idle worker for jobs enqueued by ANOTHER process.
async fn pickup(table: &mut Table) -> Result<(), JobError> {
    let schema = "bench_pickup";
    let (mut p50, mut p95, mut max) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs() {
        let jobs = Jobs::new(fresh(schema).await?);
        let latencies: std::sync::Arc<Latencies> = Default::default();
        let worker = jobs
            .worker()
            .queues(["pings"])
            .concurrency(SLOTS)
            .context(latencies.clone())
            .build()?;
        let running = worker.start();
        // Let the wake prove itself and the worker go idle.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let child = std::process::Command::new(std::env::current_exe().expect("own path"))
            .args(["__send_pings", schema])
            .status()
            .expect("the enqueuer runs");
        assert!(child.success(), "the enqueuer failed");
        let deadline = Instant::now() + Duration::from_secs(30);
        while (latencies.lock().expect("latencies").len() as u64) < PINGS
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        running.shutdown().await;
        let mut all = latencies.lock().expect("latencies").clone();
        all.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| all[((all.len() as f64 - 1.0) * q).round() as usize];
        p50.push(at(0.5));
        p95.push(at(0.95));
        max.push(at(1.0));
    }
    table.add(
        "pickup from another process p50 / p95 / max ms",
        format!(
            "{:.1} / {:.1} / {:.1}",
            median(p50),
            median(p95),
            median(max)
        ),
    );
    Ok(())
}

/// The child process of `bare_pickup`: 200 plain INSERT + NOTIFY statements, 50 ms apart.
async fn send_bare_pings() {
    let mut conn = PgConnection::connect(&url()).await.expect("connect");
    for _ in 0..PINGS {
        sqlx::query(
            "with i as (insert into bench_bare_pickup (id, sent_us) values ($1, $2) returning 1)
             select pg_notify('bench_bare_pickup', '') from i",
        )
        .bind(uuid::Uuid::now_v7())
        .bind(wall_us() as i64)
        .execute(&mut conn)
        .await
        .expect("insert and notify");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The physical floor of `pickup`, measured the same way: another process INSERTs a row and
/// NOTIFYs in one statement; this one LISTENs and, on each notification, takes the oldest row
/// with one `UPDATE ... FOR UPDATE SKIP LOCKED` on a plain connection.
async fn bare_pickup(table: &mut Table) {
    let (mut p50, mut p95, mut max) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs() {
        let mut conn = PgConnection::connect(&url()).await.expect("connect");
        exec_on(&mut conn, "drop table if exists bench_bare_pickup").await;
        exec_on(
            &mut conn,
            "create table bench_bare_pickup (id uuid primary key, sent_us bigint not null, taken boolean not null default false)",
        )
        .await;
        let mut listener = PgListener::connect(&url()).await.expect("listen");
        listener.listen("bench_bare_pickup").await.expect("listen");
        let mut child = std::process::Command::new(std::env::current_exe().expect("own path"))
            .arg("__send_bare_pings")
            .spawn()
            .expect("the enqueuer runs");
        let mut all = Vec::new();
        while (all.len() as u64) < PINGS {
            listener.recv().await.expect("notification");
            let sent: Option<i64> = sqlx::query_scalar(
                "update bench_bare_pickup set taken = true
                 where id = (select id from bench_bare_pickup where not taken
                             order by id limit 1 for update skip locked)
                 returning sent_us",
            )
            .fetch_optional(&mut conn)
            .await
            .expect("take");
            if let Some(sent) = sent {
                all.push(wall_us().saturating_sub(sent as u128) as f64 / 1000.0);
            }
        }
        assert!(child.wait().expect("the enqueuer ends").success());
        all.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| all[((all.len() as f64 - 1.0) * q).round() as usize];
        p50.push(at(0.5));
        p95.push(at(0.95));
        max.push(at(1.0));
        exec_on(&mut conn, "drop table bench_bare_pickup").await;
    }
    table.add(
        "bare pickup (INSERT+NOTIFY, LISTEN, UPDATE) p50 / p95 / max ms",
        format!(
            "{:.1} / {:.1} / {:.1}",
            median(p50),
            median(p95),
            median(max)
        ),
    );
}

/// Claims an idle worker issues in a minute once its wake is proven.
async fn idle(table: &mut Table) -> Result<(), JobError> {
    let jobs = Jobs::new(fresh("bench_idle").await?);
    let worker = jobs.worker().queues(["idle"]).build()?;
    let running = worker.start();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let before = worker.stats().claims;
    tokio::time::sleep(Duration::from_secs(60)).await;
    let claims = worker.stats().claims - before;
    running.shutdown().await;
    table.add("idle claims per minute per worker", claims.to_string());
    Ok(())
}

/// On-time starts: an idle worker (default settings: its poll backs off to 5 s once the wake
/// is proven) and, beside it, a writer: another `Jobs` client with its own pool (its own
/// connections and LISTEN session, as another process has) whose worker is driven by hand, so
/// it arms no timer. The writer enqueues delayed jobs, and runs the first attempts of retries
/// (a backoff) and parks (`run.sleep`), each due 2 to 6 s later, spread 100 ms apart; the
/// retries' and parks' rows are inserted with a bare INSERT (no wake), so the writer, not the
/// idle worker, takes their first attempts. Each row's lateness is its last claim's
/// `started_at` minus its `run_at`, both read from the row.
async fn on_time_starts(table: &mut Table) -> Result<(), JobError> {
    let schema = "bench_ontime";
    let idle_driver = fresh(schema).await?;
    let idle_jobs = Jobs::new(idle_driver.clone());
    let idle = bench_on_time::idle(&idle_jobs, SLOTS)?;
    let running = idle.start();
    // Let the wake prove itself and the poll back off to its ceiling.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let claims_before = idle.stats().claims;
    let started = Instant::now();

    let writer_driver = PostgresDriver::connect(&url()).await?.with_schema(schema)?;
    let writer_jobs = Jobs::new(writer_driver.clone());
    let writer = bench_on_time::writer(&writer_jobs)?;
    let bench = bench_id();
    let due_in = bench_on_time::due_in;
    let insert = format!(
        "insert into {schema}.x_jobs (id, run_id, name, queue, input, idempotency_key, state,
             max_attempts, run_at, created_at, updated_at)
         values ($1, $1, 'bench.on_time', 'ontime', $2, $3, 'ready', 3, now(), now(), now())"
    );
    for kind in [KIND_RETRY, KIND_PARK] {
        for n in 0..ON_TIME_JOBS {
            let id = uuid::Uuid::now_v7();
            let input = serde_json::json!({
                "bench": bench, "n": n + u64::from(kind) * 1000, "kind": kind, "delay_ms": due_in(n, kind),
            });
            sqlx::query(AssertSqlSafe(insert.clone()))
                .bind(id)
                .bind(&input)
                .bind(format!("ontime:{bench}:{}", n + u64::from(kind) * 1000))
                .execute(writer_driver.pool())
                .await
                .expect("insert");
        }
    }
    bench_on_time::run_first_attempts(&writer, 2 * ON_TIME_JOBS as usize, true).await?;
    bench_on_time::enqueue_delayed(&writer_jobs, &bench).await?;
    drop(writer);
    let deadline = Instant::now() + Duration::from_secs(60);
    let live = format!(
        "select count(*) from {schema}.x_jobs where state in ('ready', 'delayed', 'running', 'suspended')"
    );
    loop {
        let left: i64 = sqlx::query_scalar(AssertSqlSafe(live.clone()))
            .fetch_one(idle_driver.pool())
            .await
            .expect("count");
        if left == 0 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let window = started.elapsed();
    let claims = idle.stats().claims - claims_before;
    running.shutdown().await;
    let rows: Vec<(serde_json::Value, f64)> = sqlx::query_as(AssertSqlSafe(format!(
        "select input, (extract(epoch from started_at - run_at) * 1000)::float8
         from {schema}.x_jobs where state = 'done'"
    )))
    .fetch_all(idle_driver.pool())
    .await
    .expect("lateness");
    let unmeasured: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "select count(*) from {schema}.x_jobs where state <> 'done'"
    )))
    .fetch_one(idle_driver.pool())
    .await
    .expect("count");
    let late: Vec<(u8, f64)> = rows
        .iter()
        .map(|(input, ms)| (bench_on_time::kind_of(input), *ms))
        .collect();
    for (label, value) in bench_on_time::lateness_rows(&late, "start") {
        table.add(&label, value);
    }
    table.add(
        "on-time: idle worker's claims during the window",
        format!(
            "{claims} in {:.1} s ({} first attempts taken by the idle worker, not measured)",
            window.as_secs_f64(),
            unmeasured
        ),
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let chosen: Vec<String> = std::env::args().skip(1).collect();
    if chosen.first().map(String::as_str) == Some("__send_pings") {
        return send_pings(&chosen[1]).await;
    }
    if chosen.first().map(String::as_str) == Some("__send_bare_pings") {
        send_bare_pings().await;
        return Ok(());
    }
    let wants = |name: &str| chosen.is_empty() || chosen.iter().any(|c| c == name);
    let mut table = Table { rows: Vec::new() };
    println!(
        "running (medians of {} runs, {SLOTS} worker slots, no-op jobs)...",
        runs()
    );
    if wants("pool") {
        pooled_inserts(&mut table).await;
    }
    if wants("enqueue") {
        single_enqueue(&mut table).await?;
    }
    if wants("bulk") {
        bulk_enqueue(&mut table).await?;
    }
    if wants("e2e") {
        end_to_end::<Noop>(
            &mut table,
            "end-to-end no-op, 20,000 queued /s",
            "bench_e2e",
        )
        .await?;
    }
    if wants("e2e-steps") {
        end_to_end::<ThreeSteps>(&mut table, "end-to-end 3-step job /s", "bench_e2e_steps").await?;
    }
    if wants("memory") {
        memory_end_to_end(&mut table).await?;
    }
    if wants("chain") {
        dependency_chain(&mut table).await?;
    }
    if wants("spans") {
        spans::fan_out_fan_in(&mut table).await?;
        spans::batch(&mut table).await?;
    }
    if wants("claim") {
        claims(&mut table).await?;
    }
    if wants("retention") {
        retention(&mut table).await?;
    }
    if wants("pickup") {
        bare_pickup(&mut table).await;
        pickup(&mut table).await?;
    }
    if wants("idle") {
        idle(&mut table).await?;
    }
    if wants("ontime") {
        on_time_starts(&mut table).await?;
    }
    if wants("export") {
        bench_export::export_and_import(&mut table).await?;
    }
    println!("\n| measure | value |\n|---|---|");
    for (what, value) in &table.rows {
        println!("| {what} | {value} |");
    }
    Ok(())
}
