//! The SQLite driver's benchmarks, each beside a bare SQLite INSERT of the same run on the
//! same kind of file (WAL, `synchronous = NORMAL`, as the driver opens it): the physical
//! reference.
//!
//! ```text
//! cargo run --release -p jobs-examples --bin bench-sqlite
//! cargo run --release -p jobs-examples --bin bench-sqlite -- e2e pickup   # some scenarios only
//! ```
//!
//! Scenarios: `enqueue` (single enqueues, interleaved in blocks of 100 with bare single-row
//! INSERT commits on a plain connection), `bulk` (`enqueue_many` of 1,000, interleaved with a
//! bare 1,000-row INSERT transaction), `e2e` (no-op jobs, a pre-filled queue of 20,000, 16
//! slots), `pickup` (jobs enqueued by another process on the same file, 200 of them 50 ms
//! apart, to an idle worker woken through `PRAGMA data_version`), `ontime` (how late an idle
//! worker starts a delayed job, a retry after its backoff and a parked sleep that another
//! process wrote, the due times reaching it through the due hints). Files live in a fresh temp
//! directory, removed at the end.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use jobs::driver::SqliteDriver;
use jobs::prelude::*;
use jobs::sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqliteSynchronous,
};
use jobs::sqlx::{self, ConnectOptions, Connection};

#[path = "../bench_on_time.rs"]
mod bench_on_time;
use bench_on_time::{Due, OnTime, KIND_DELAYED, KIND_PARK, KIND_RETRY, ON_TIME_JOBS};

const RUNS: usize = 3;
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

fn bench_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn rate(n: usize, took: Duration) -> f64 {
    n as f64 / took.as_secs_f64()
}

/// A fresh file for one run.
fn file(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}-{}.db", bench_id()))
}

fn url(path: &Path) -> String {
    format!("sqlite://{}", path.display())
}

async fn driver(path: &Path) -> Result<SqliteDriver, JobError> {
    let driver = SqliteDriver::connect(&url(path)).await?;
    driver.migrate().await?;
    Ok(driver)
}

/// A plain connection with the driver's settings and a fresh `bench_bare` table (the id and
/// the JSON payload come from the client, as a job's do).
async fn bare(path: &Path) -> SqliteConnection {
    let mut conn = plain(path).await;
    sqlx::query(
        "create table bench_bare (id blob primary key, payload text not null, at text not null)",
    )
    .execute(&mut conn)
    .await
    .expect("create");
    conn
}

async fn bare_insert(conn: &mut SqliteConnection, n: u64) {
    sqlx::query("insert into bench_bare (id, payload, at) values (?1, ?2, ?3)")
        .bind(uuid::Uuid::now_v7())
        .bind(serde_json::json!({ "bench": "bare", "n": n }))
        .bind(
            chrono::Utc::now()
                .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string(),
        )
        .execute(conn)
        .await
        .expect("insert");
}

async fn bare_insert_1000(conn: &mut SqliteConnection, batch: u64) {
    let mut tx = conn.begin().await.expect("begin");
    for i in 0..1_000 {
        bare_insert(&mut tx, batch * 1_000 + i).await;
    }
    tx.commit().await.expect("commit");
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

/// Medians of the bare rate, ours and their ratio over the runs, each run timing the two in
/// alternating blocks so both see the same machine.
#[derive(Default)]
struct Compared {
    bare: Vec<f64>,
    ours: Vec<f64>,
    ratios: Vec<f64>,
}

impl Compared {
    fn push(&mut self, n: usize, bare: Duration, ours: Duration) {
        self.bare.push(rate(n, bare));
        self.ours.push(rate(n, ours));
        self.ratios.push(bare.as_secs_f64() / ours.as_secs_f64());
    }

    fn report(self, table: &mut Table, bare_label: &str, ours_label: &str) {
        table.add(bare_label, format!("{:.0}", median(self.bare)));
        table.add(
            ours_label,
            format!("{:.0} ({:.2}x)", median(self.ours), median(self.ratios)),
        );
    }
}

/// A plain connection with the driver's settings (WAL, `synchronous = NORMAL`).
async fn plain(path: &Path) -> SqliteConnection {
    SqliteConnectOptions::from_str(&url(path))
        .expect("url")
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(false)
        .connect()
        .await
        .expect("connect")
}

/// A job's row written straight into the driver's `x_jobs`, no dedupe and nothing read back:
/// what the schema itself costs a commit (the row and its primary key, fair-claim, live-key and
/// created-order index entries).
async fn job_row_insert(conn: &mut SqliteConnection, bench: &str, n: u64) {
    let id = uuid::Uuid::now_v7();
    let at = chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string();
    sqlx::query(
        "insert into x_jobs (id, run_id, name, queue, input, idempotency_key, state,
             max_attempts, run_at, created_at, updated_at)
         values (?1, ?1, 'noop', 'default', ?2, ?3, 'ready', 25, ?4, ?4, ?4)",
    )
    .bind(id)
    .bind(serde_json::json!({ "bench": bench, "n": n }))
    .bind(format!("noop:{bench}:{n}"))
    .bind(at)
    .execute(conn)
    .await
    .expect("insert");
}

async fn single_enqueue(dir: &Path, table: &mut Table) -> Result<(), JobError> {
    let mut compared = Compared::default();
    let mut schema = Compared::default();
    for _ in 0..RUNS {
        let jobs = Jobs::new(driver(&file(dir, "enqueue")).await?);
        let mut conn = bare(&file(dir, "bare")).await;
        let schema_file = file(dir, "schema");
        driver(&schema_file).await?.close().await;
        let mut job_rows = plain(&schema_file).await;
        let bench = bench_id();
        let (mut bare_took, mut rows_took, mut ours_took) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        for block in 0..20_u64 {
            let started = Instant::now();
            for i in 0..100 {
                bare_insert(&mut conn, block * 100 + i).await;
            }
            bare_took += started.elapsed();
            let started = Instant::now();
            for i in 0..100 {
                job_row_insert(&mut job_rows, &bench, block * 100 + i).await;
            }
            rows_took += started.elapsed();
            let started = Instant::now();
            for i in 0..100 {
                let item = Item {
                    bench: bench.clone(),
                    n: block * 100 + i,
                };
                Noop::enqueue(&jobs, item).await?;
            }
            ours_took += started.elapsed();
        }
        compared.push(2_000, bare_took, ours_took);
        schema.push(2_000, bare_took, rows_took);
    }
    compared.report(
        table,
        "bare single-row INSERT commit /s",
        "single enqueue /s (x the bare INSERT, interleaved)",
    );
    table.add(
        "job row INSERT commit into the driver's x_jobs /s (x the bare INSERT): the schema's floor",
        format!("{:.0} ({:.2}x)", median(schema.ours), median(schema.ratios)),
    );
    Ok(())
}

async fn bulk_enqueue(dir: &Path, table: &mut Table) -> Result<(), JobError> {
    let mut compared = Compared::default();
    for _ in 0..RUNS {
        let jobs = Jobs::new(driver(&file(dir, "bulk")).await?);
        let mut conn = bare(&file(dir, "bare")).await;
        let bench = bench_id();
        let (mut bare_took, mut ours_took) = (Duration::ZERO, Duration::ZERO);
        for block in 0..10_u64 {
            let started = Instant::now();
            for b in 0..5 {
                bare_insert_1000(&mut conn, block * 5 + b).await;
            }
            bare_took += started.elapsed();
            let started = Instant::now();
            for b in 0..5 {
                let batch = block * 5 + b;
                let inputs = (0..1_000).map(|k| Item {
                    bench: bench.clone(),
                    n: batch * 1_000 + k,
                });
                Noop::enqueue_many(&jobs, inputs).await?;
            }
            ours_took += started.elapsed();
        }
        compared.push(50_000, bare_took, ours_took);
    }
    compared.report(
        table,
        "bare 1,000-row INSERT transaction rows/s",
        "bulk enqueue /s, batches of 1,000 (x the bare INSERT, interleaved)",
    );
    Ok(())
}

async fn end_to_end(dir: &Path, table: &mut Table) -> Result<(), JobError> {
    let mut rates = Vec::new();
    for _ in 0..RUNS {
        let jobs = Jobs::new(driver(&file(dir, "e2e")).await?);
        let bench = bench_id();
        let total = 20_000_u64;
        for chunk in 0..total / 5_000 {
            let inputs = (chunk * 5_000..(chunk + 1) * 5_000).map(|n| Item {
                bench: bench.clone(),
                n,
            });
            Noop::enqueue_many(&jobs, inputs).await?;
        }
        let worker = jobs.worker().concurrency(SLOTS).build()?;
        let started = Instant::now();
        let running = worker.start();
        let deadline = Instant::now() + Duration::from_secs(300);
        // Looked at every millisecond, as `bench`'s drain: each look can add up to its period to
        // the time measured (5 ms before 2026-12-04).
        while worker.stats().completed < total && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let took = started.elapsed();
        running.shutdown().await;
        rates.push(rate(worker.stats().completed as usize, took));
    }
    table.add(
        "end-to-end no-op, 20,000 queued /s",
        format!("{:.0}", median(rates)),
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

/// The child process of `pickup`: 200 pings on the file, 50 ms apart.
async fn send_pings(path: &str) -> Result<(), JobError> {
    let jobs = Jobs::new(SqliteDriver::connect(&url(Path::new(path))).await?);
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

async fn pickup(dir: &Path, table: &mut Table) -> Result<(), JobError> {
    let (mut p50, mut p95, mut max) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let path = file(dir, "pickup");
        let jobs = Jobs::new(driver(&path).await?);
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
            .args(["__send_pings", &path.display().to_string()])
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

/// The stored form of a timestamp (fixed width, so text order is time order).
fn stored(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// The child process of `ontime`: inserts the retries' and parks' rows with a bare INSERT
/// (created an hour ago and due before that, so no wake announces them and the idle worker leaves them to this
/// process), runs their first attempts with a worker driven by hand (it arms no timer), then
/// enqueues the delayed jobs and exits. Each is due 2 to 6 s later, 100 ms apart.
async fn write_on_time(path: &str) -> Result<(), JobError> {
    let driver = SqliteDriver::connect(&url(Path::new(path))).await?;
    let jobs = Jobs::new(driver.clone());
    let writer = bench_on_time::writer(&jobs)?;
    let bench = bench_id();
    let due_in = bench_on_time::due_in;
    let now = chrono::Utc::now();
    // Due before it was created: the due-hint trigger announces only a run time after the
    // creation (a delayed job).
    let (due, created) = (
        stored(now - chrono::Duration::hours(2)),
        stored(now - chrono::Duration::hours(1)),
    );
    for kind in [KIND_RETRY, KIND_PARK] {
        for n in 0..ON_TIME_JOBS {
            let n = n + u64::from(kind) * 1000;
            let id = uuid::Uuid::now_v7();
            let input = serde_json::json!({
                "bench": bench, "n": n, "kind": kind, "delay_ms": due_in(n % 1000, kind),
            });
            sqlx::query(
                "insert into x_jobs (id, run_id, name, queue, input, idempotency_key, state,
                     max_attempts, run_at, created_at, updated_at)
                 values (?1, ?1, 'bench.on_time', 'ontime', ?2, ?3, 'ready', 3, ?4, ?5, ?5)",
            )
            .bind(id.as_bytes().as_slice())
            .bind(input.to_string())
            .bind(format!("ontime:{bench}:{n}"))
            .bind(&due)
            .bind(&created)
            .execute(driver.pool())
            .await
            .expect("insert");
        }
    }
    bench_on_time::run_first_attempts(&writer, 2 * ON_TIME_JOBS as usize, true).await?;
    bench_on_time::enqueue_delayed(&jobs, &bench).await?;
    Ok(())
}

/// On-time starts: an idle worker with default settings (its poll backs off to 5 s once the
/// wake is live) and another process writing delayed jobs, retries and parks
/// ([`write_on_time`]); each row's lateness is its last claim's `started_at` minus its
/// `run_at`, both read from the row.
async fn on_time_starts(dir: &Path, table: &mut Table) -> Result<(), JobError> {
    let path = file(dir, "ontime");
    let idle_driver = driver(&path).await?;
    let idle_jobs = Jobs::new(idle_driver.clone());
    // A row created now, so the wake's first look does not take the writer's backdated rows
    // for new ones (it announces rows created after the newest it saw at its start).
    let seed = OnTime::enqueue_with(
        &idle_jobs,
        Due {
            bench: bench_id(),
            n: 0,
            kind: KIND_DELAYED,
            delay_ms: 0,
        },
        EnqueueOptions::new().delay(Duration::from_secs(86_400)),
    )
    .await?;
    idle_jobs.cancel(seed.id).await?;
    let idle = bench_on_time::idle(&idle_jobs, SLOTS)?;
    let running = idle.start();
    // Let the poll back off to its ceiling.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let claims_before = idle.stats().claims;
    let started = Instant::now();
    let child = std::process::Command::new(std::env::current_exe().expect("own path"))
        .args(["__write_on_time", &path.display().to_string()])
        .status()
        .expect("the writer runs");
    assert!(child.success(), "the writer failed");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left: i64 = sqlx::query_scalar(
            "select count(*) from x_jobs where state in ('ready', 'delayed', 'running', 'suspended')",
        )
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
    let rows: Vec<(String, String, String)> =
        sqlx::query_as("select input, started_at, run_at from x_jobs where state = 'done'")
            .fetch_all(idle_driver.pool())
            .await
            .expect("lateness");
    let unmeasured: i64 = sqlx::query_scalar("select count(*) from x_jobs where state = 'failed'")
        .fetch_one(idle_driver.pool())
        .await
        .expect("count");
    let parse = |at: &str| chrono::DateTime::parse_from_rfc3339(at).expect("a stored time");
    let late: Vec<(u8, f64)> = rows
        .iter()
        .map(|(input, started, due)| {
            let input = serde_json::from_str::<serde_json::Value>(input).expect("json");
            let ms = (parse(started) - parse(due))
                .num_microseconds()
                .unwrap_or(0) as f64
                / 1000.0;
            (bench_on_time::kind_of(&input), ms)
        })
        .collect();
    for (label, value) in bench_on_time::lateness_rows(&late, "start") {
        table.add(&label, value);
    }
    table.add(
        "on-time: idle worker's claims during the window",
        format!(
            "{claims} in {:.1} s ({unmeasured} first attempts taken by the idle worker, not measured)",
            window.as_secs_f64()
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
    if chosen.first().map(String::as_str) == Some("__write_on_time") {
        return write_on_time(&chosen[1]).await;
    }
    let wants = |name: &str| chosen.is_empty() || chosen.iter().any(|c| c == name);
    let dir = std::env::temp_dir().join(format!("jobs-bench-sqlite-{}", bench_id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut table = Table { rows: Vec::new() };
    println!(
        "running on {} (medians of {RUNS} runs, {SLOTS} worker slots, no-op jobs)...",
        dir.display()
    );
    let result = async {
        if wants("enqueue") {
            single_enqueue(&dir, &mut table).await?;
        }
        if wants("bulk") {
            bulk_enqueue(&dir, &mut table).await?;
        }
        if wants("e2e") {
            end_to_end(&dir, &mut table).await?;
        }
        if wants("pickup") {
            pickup(&dir, &mut table).await?;
        }
        if wants("ontime") {
            on_time_starts(&dir, &mut table).await?;
        }
        Ok::<_, JobError>(())
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    println!("\n| measure | value |\n|---|---|");
    for (what, value) in &table.rows {
        println!("| {what} | {value} |");
    }
    Ok(())
}
