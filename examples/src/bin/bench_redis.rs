//! The Redis driver's own measurements, the ones the peer harness does not take: memory per
//! queued job, commands an idle worker sends per minute, and what a Redis Cluster costs and
//! gives beside one server (single enqueue, bulk, end-to-end drain). The side-by-side table
//! with apalis-redis, BullMQ and `redis-benchmark` comes from the peer harness
//! (`SCRIPT=run-redis.sh examples/peer-harness/run.sh`).
//!
//! ```text
//! REDIS_URL=redis://127.0.0.1:6390 REDIS_CLUSTER_URL=redis://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002 \
//!     cargo run --release -p jobs-examples --bin bench-redis
//! cargo run --release -p jobs-examples --bin bench-redis -- memory idle    # some only
//! ```
//!
//! Scenarios: `memory` (10,000 queued no-op jobs: the server's `used_memory` growth per job,
//! and `MEMORY USAGE` of one job's hash), `idle` (one worker with default settings on an empty
//! queue: `total_commands_processed` growth over `IDLE_SECS`, default 60, per minute), `lists`
//! (the operator's job list, a page per filter, on a queue with 100,000 parked rows of a 2 KB
//! input), `single`
//! and `cluster` (20,000 single enqueues, 100,000 in calls of 1,000, and an end-to-end drain of
//! 20,000 no-op jobs with 16 slots; on the cluster also three queues drained by three workers,
//! one queue per master's slot range where the names fall so), `ontime` (how late an idle worker
//! starts a delayed job, a retry after its backoff and a parked sleep written by another
//! client). Each store gets a fresh prefix.

use std::time::{Duration, Instant};

use jobs::driver::RedisDriver;
use jobs::prelude::*;

#[path = "../bench_on_time.rs"]
mod bench_on_time;
use bench_on_time::{Due, OnTime, KIND_PARK, KIND_RETRY, ON_TIME_JOBS};

const RUNS: usize = 3;
const SLOTS: u32 = 16;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Item {
    bench: String,
    n: u64,
}

#[job(key = "noop:{bench}:{n}", tenant = none)]
async fn noop_redis_bench(_run: Run, _input: Item) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "noop:{bench}:{n}", tenant = none, queue = "q-a")]
async fn noop_redis_a(_run: Run, _input: Item) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "noop:{bench}:{n}", tenant = none, queue = "q-b")]
async fn noop_redis_b(_run: Run, _input: Item) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "noop:{bench}:{n}", tenant = none, queue = "q-c")]
async fn noop_redis_c(_run: Run, _input: Item) -> Result<(), JobError> {
    Ok(())
}

/// The list scenario's job: an input of about 2 KB (an order with its lines), outside its key.
#[derive(Serialize, Deserialize, JsonSchema)]
struct Order {
    bench: String,
    n: u64,
    lines: String,
}

#[job(key = "order:{bench}:{n}", tenant = none)]
async fn order_redis_bench(_run: Run, _input: Order) -> Result<(), JobError> {
    Ok(())
}

/// On-time starts: an idle worker with default settings (its poll at its 5 s ceiling, the
/// Pub/Sub wake live) and a writer, another `Jobs` client with its own connections, whose
/// worker is driven by hand (it arms no timer). The writer enqueues the retries and parks in one
/// batch and runs their first attempts (the idle worker, woken by the batch, takes a few: not
/// measured), then enqueues the delayed jobs; each is due 2 to 6 s later, 100 ms apart. A row's
/// lateness is its settle's `updated_at` minus its `run_at` (so it includes the no-op run and
/// its ack).
async fn on_time_starts(url: &str) -> Result<(), JobError> {
    let prefixed = if url.contains('?') {
        format!("{url}&prefix=bench{}", bench_id())
    } else {
        format!("{url}/?prefix=bench{}", bench_id())
    };
    let idle_jobs = Jobs::new(RedisDriver::connect(&prefixed).await?);
    let idle = bench_on_time::idle(&idle_jobs, SLOTS)?;
    let running = idle.start();
    tokio::time::sleep(Duration::from_secs(12)).await;
    let claims_before = idle.stats().claims;
    let started = Instant::now();
    let writer_jobs = Jobs::new(RedisDriver::connect(&prefixed).await?);
    let writer = bench_on_time::writer(&writer_jobs)?;
    let bench = bench_id();
    let due_in = bench_on_time::due_in;
    let mut ids = Vec::new();
    let first_attempts: Vec<Due> = [KIND_RETRY, KIND_PARK]
        .into_iter()
        .flat_map(|kind| {
            let bench = bench.clone();
            (0..ON_TIME_JOBS).map(move |n| Due {
                bench: bench.clone(),
                n: n + u64::from(kind) * 1000,
                kind,
                delay_ms: due_in(n, kind),
            })
        })
        .collect();
    for enqueued in writer_jobs
        .enqueue_many::<OnTime, _>(first_attempts)
        .await?
    {
        ids.push(enqueued.id);
    }
    bench_on_time::run_first_attempts(&writer, ids.len(), false).await?;
    ids.extend(bench_on_time::enqueue_delayed(&writer_jobs, &bench).await?);
    drop(writer);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut rows = Vec::new();
    while Instant::now() < deadline {
        rows.clear();
        for id in &ids {
            if let Some(row) = idle_jobs.job(*id).await? {
                rows.push(row);
            }
        }
        if rows.iter().all(|r| !r.state.is_live()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let window = started.elapsed();
    let claims = idle.stats().claims - claims_before;
    running.shutdown().await;
    let unmeasured = rows.iter().filter(|r| r.state != JobState::Done).count();
    let late: Vec<(u8, f64)> = rows
        .iter()
        .filter(|r| r.state == JobState::Done)
        .map(|r| {
            let ms = (r.updated_at - r.run_at).num_microseconds().unwrap_or(0) as f64 / 1000.0;
            (bench_on_time::kind_of(&r.input), ms)
        })
        .collect();
    for (label, value) in bench_on_time::lateness_rows(&late, "start and ack") {
        println!("ontime: {label}: {value}");
    }
    println!(
        "ontime: the idle worker's claims during the window: {claims} in {:.1} s ({unmeasured} \
         first attempts it took, not measured)",
        window.as_secs_f64()
    );
    Ok(())
}

/// The queues a run spreads over, by the job declared on each.
const ONE_QUEUE: &[&str] = &["default"];
const THREE_QUEUES: &[&str] = &["q-a", "q-b", "q-c"];

async fn enqueue_one(jobs: &Jobs, queue: &str, item: Item) -> Result<(), JobError> {
    match queue {
        "q-a" => NoopRedisA::enqueue(jobs, item).await.map(drop),
        "q-b" => NoopRedisB::enqueue(jobs, item).await.map(drop),
        "q-c" => NoopRedisC::enqueue(jobs, item).await.map(drop),
        _ => NoopRedisBench::enqueue(jobs, item).await.map(drop),
    }
}

async fn enqueue_batch(
    jobs: &Jobs,
    queue: &str,
    items: impl IntoIterator<Item = Item>,
) -> Result<(), JobError> {
    match queue {
        "q-a" => NoopRedisA::enqueue_many(jobs, items).await.map(drop),
        "q-b" => NoopRedisB::enqueue_many(jobs, items).await.map(drop),
        "q-c" => NoopRedisC::enqueue_many(jobs, items).await.map(drop),
        _ => NoopRedisBench::enqueue_many(jobs, items).await.map(drop),
    }
}

fn bench_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn rate(n: u64, took: Duration) -> f64 {
    n as f64 / took.as_secs_f64()
}

/// A store of its own on `url`: a fresh key prefix.
async fn store(url: &str) -> Result<Jobs, JobError> {
    let url = if url.contains('?') {
        format!("{url}&prefix=bench{}", bench_id())
    } else {
        format!("{url}/?prefix=bench{}", bench_id())
    };
    Ok(Jobs::new(RedisDriver::connect(&url).await?))
}

/// One `INFO` field of the server at `url` (its first node), read with `redis-cli`.
async fn info_field(url: &str, section: &str, field: &str) -> Result<u64, JobError> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let first = rest.split([',', '/', '?']).next().unwrap_or(rest);
    let (host, port) = first.rsplit_once(':').unwrap_or((first, "6379"));
    let host = host.rsplit('@').next().unwrap_or(host);
    let out = std::process::Command::new("redis-cli")
        .args(["-h", host, "-p", port, "info", section])
        .output()
        .map_err(|e| JobError::terminal(format!("redis-cli: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let prefix = format!("{field}:");
    Ok(text
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0))
}

/// The script calls the server has run (`FCALL`, and `EVALSHA`/`EVAL` for other clients) and
/// their server time in microseconds, from `INFO commandstats`.
fn script_stats(url: &str) -> Result<(u64, u64), JobError> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let first = rest.split([',', '/', '?']).next().unwrap_or(rest);
    let (host, port) = first.rsplit_once(':').unwrap_or((first, "6379"));
    let out = std::process::Command::new("redis-cli")
        .args(["-h", host, "-p", port, "info", "commandstats"])
        .output()
        .map_err(|e| JobError::terminal(format!("redis-cli: {e}")))?;
    let field = |line: &str, name: &str| -> u64 {
        line.split(&format!("{name}="))
            .nth(1)
            .and_then(|v| v.split(',').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let scripts = ["cmdstat_fcall:", "cmdstat_evalsha:", "cmdstat_eval:"];
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| scripts.iter().any(|s| l.starts_with(s)))
        .fold((0, 0), |(calls, usec), l| {
            (calls + field(l, "calls"), usec + field(l, "usec"))
        }))
}

fn script_calls(url: &str) -> Result<u64, JobError> {
    Ok(script_stats(url)?.0)
}

/// The operator's job list on a queue with many parked rows (`PARKED` jobs of a 2 KB input
/// parked by a sleep or an event wait, 16 running, 100 ready): the server time of a page of 50
/// with each filter, from the scripts' time in `INFO commandstats`, median of five pages.
async fn lists(url: &str) -> Result<(), JobError> {
    const PARKED: u64 = 100_000;
    let jobs = store(url).await?;
    let driver = jobs.driver().clone();
    let bench = bench_id();
    let lines = "x".repeat(2_000);
    let items = |from: u64, to: u64| {
        let (bench, lines) = (bench.clone(), lines.clone());
        (from..to).map(move |n| Order {
            bench: bench.clone(),
            n,
            lines: lines.clone(),
        })
    };
    for chunk in 0..PARKED / 1_000 {
        OrderRedisBench::enqueue_many(&jobs, items(chunk * 1_000, (chunk + 1) * 1_000)).await?;
    }
    let far = jobs.now() + chrono::Duration::days(365);
    let claim = |limit: u32| jobs::driver::ClaimParams {
        demand: vec![jobs::driver::QueueDemand {
            queue: "default".into(),
            limit,
        }],
        worker_id: "bench".into(),
        visibility_timeout: Duration::from_secs(3_600),
        drop_exhausted: Vec::new(),
        fair_after: String::new(),
        now: jobs.now(),
    };
    let mut parked = 0;
    while parked < PARKED {
        let claimed = driver.job_claim(&claim(1_000)).await?.jobs;
        if claimed.is_empty() {
            break;
        }
        for job in claimed {
            let park = jobs::driver::NackParams {
                job_id: job.id,
                by: job.by,
                target: jobs::driver::NackTarget::Park,
                run_at: far,
                counts_as_attempt: false,
                error: None,
                error_code: None,
                now: jobs.now(),
            };
            driver.job_nack(&park).await?;
            parked += 1;
        }
    }
    OrderRedisBench::enqueue_many(&jobs, items(PARKED, PARKED + 116)).await?;
    driver.job_claim(&claim(16)).await?;
    let introspect = driver
        .introspect()
        .ok_or_else(|| JobError::terminal("the Redis driver has an operator surface"))?;
    for (label, state) in [
        ("running", Some(jobs::driver::JobState::Running)),
        ("every state", None),
        ("ready", Some(jobs::driver::JobState::Ready)),
        ("suspended", Some(jobs::driver::JobState::Suspended)),
    ] {
        let mut usec = Vec::new();
        let mut rows = 0;
        for _ in 0..5 {
            let before = script_stats(url)?.1;
            let params = jobs::driver::introspect::JobListParams {
                state,
                limit: Some(50),
                ..Default::default()
            };
            rows = introspect.job_list(&params).await?.jobs.len();
            usec.push((script_stats(url)?.1 - before) as f64);
        }
        println!(
            "lists: {label}: {:.2} ms of server time a page of {rows} ({PARKED} parked, 16 running, 100 ready; inputs of 2 KB)",
            median(usec) / 1_000.0
        );
    }
    Ok(())
}

async fn memory(url: &str) -> Result<(), JobError> {
    let jobs = store(url).await?;
    let bench = bench_id();
    // One job first, so the queue's own keys exist before the measured growth.
    NoopRedisBench::enqueue(
        &jobs,
        Item {
            bench: bench.clone(),
            n: 0,
        },
    )
    .await?;
    let before = info_field(url, "memory", "used_memory").await?;
    let total = 10_000u64;
    for chunk in 0..total / 1_000 {
        let items = (1 + chunk * 1_000..1 + (chunk + 1) * 1_000).map(|n| Item {
            bench: bench.clone(),
            n,
        });
        NoopRedisBench::enqueue_many(&jobs, items).await?;
    }
    let after = info_field(url, "memory", "used_memory").await?;
    println!(
        "memory: {:.0} bytes of used_memory per queued job ({total} no-op jobs, input {{bench, n}})",
        after.saturating_sub(before) as f64 / total as f64
    );
    Ok(())
}

async fn idle(url: &str) -> Result<(), JobError> {
    let secs: u64 = std::env::var("IDLE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let jobs = store(url).await?;
    let worker = jobs.worker().queues(["default"]).build()?;
    let running = worker.start();
    // Let the worker reach its idle ceiling before counting.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let before = info_field(url, "stats", "total_commands_processed").await?;
    let scripts_before = script_calls(url)?;
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let after = info_field(url, "stats", "total_commands_processed").await?;
    let scripts = script_calls(url)?.saturating_sub(scripts_before);
    running.shutdown().await;
    // The INFO and the commandstats read are two commands of ours.
    let commands = after.saturating_sub(before).saturating_sub(2);
    let per_minute = |n: u64| n as f64 * 60.0 / secs as f64;
    println!(
        "idle: one idle worker on one queue sends {:.1} scripts a minute, {:.1} commands a \
         minute counting those the scripts run ({secs} s, default settings)",
        per_minute(scripts),
        per_minute(commands)
    );
    Ok(())
}

async fn throughput(url: &str, label: &str, queues: &[&str]) -> Result<(), JobError> {
    let (mut single, mut bulk, mut e2e) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let jobs = store(url).await?;
        let bench = bench_id();
        let n_single = 20_000u64;
        let started = Instant::now();
        for n in 0..n_single {
            let queue = queues[(n as usize) % queues.len()];
            enqueue_one(
                &jobs,
                queue,
                Item {
                    bench: bench.clone(),
                    n,
                },
            )
            .await?;
        }
        single.push(rate(n_single, started.elapsed()));

        let bench = bench_id();
        let n_bulk = 100_000u64;
        let started = Instant::now();
        for chunk in 0..n_bulk / 1_000 {
            let queue = queues[(chunk as usize) % queues.len()];
            let items = (chunk * 1_000..(chunk + 1) * 1_000).map(|n| Item {
                bench: bench.clone(),
                n,
            });
            enqueue_batch(&jobs, queue, items).await?;
        }
        bulk.push(rate(n_bulk, started.elapsed()));

        // The drain: a fresh store, 20,000 queued, then one worker per queue.
        let jobs = store(url).await?;
        let bench = bench_id();
        let total = 20_000u64;
        for chunk in 0..total / 1_000 {
            let queue = queues[(chunk as usize) % queues.len()];
            let items = (chunk * 1_000..(chunk + 1) * 1_000).map(|n| Item {
                bench: bench.clone(),
                n,
            });
            enqueue_batch(&jobs, queue, items).await?;
        }
        let workers: Vec<_> = queues
            .iter()
            .map(|q| jobs.worker().queues([*q]).concurrency(SLOTS).build())
            .collect::<Result<_, _>>()?;
        let started = Instant::now();
        let running: Vec<_> = workers.iter().map(|w| w.start()).collect();
        let deadline = Instant::now() + Duration::from_secs(300);
        let done = || workers.iter().map(|w| w.stats().completed).sum::<u64>();
        while done() < total && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let took = started.elapsed();
        for r in running {
            r.shutdown().await;
        }
        e2e.push(rate(done(), took));
    }
    println!(
        "{label}: single enqueue {:.0}/s, bulk (1,000 a call) {:.0}/s, end-to-end drain of 20,000 no-op jobs {:.0}/s (medians of {RUNS})",
        median(single),
        median(bulk),
        median(e2e)
    );
    Ok(())
}

/// Only the end-to-end drain, for a profile: 20,000 queued no-op jobs, 16 slots.
async fn e2e_only(url: &str) -> Result<(), JobError> {
    let jobs = store(url).await?;
    let bench = bench_id();
    for chunk in 0..20u64 {
        let items = (chunk * 1_000..(chunk + 1) * 1_000).map(|n| Item {
            bench: bench.clone(),
            n,
        });
        enqueue_batch(&jobs, "default", items).await?;
    }
    let worker = jobs
        .worker()
        .queues(["default"])
        .concurrency(SLOTS)
        .build()?;
    let started = Instant::now();
    let running = worker.start();
    while worker.stats().completed < 20_000 && started.elapsed() < Duration::from_secs(120) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let took = started.elapsed();
    running.shutdown().await;
    println!("e2e only: {:.0}/s", rate(worker.stats().completed, took));
    Ok(())
}

/// Only the single enqueue, for a profile: 20,000 jobs one call each.
async fn single_only(url: &str) -> Result<(), JobError> {
    let jobs = store(url).await?;
    let bench = bench_id();
    let started = Instant::now();
    for n in 0..20_000u64 {
        enqueue_one(
            &jobs,
            "default",
            Item {
                bench: bench.clone(),
                n,
            },
        )
        .await?;
    }
    println!("single only: {:.0}/s", rate(20_000, started.elapsed()));
    Ok(())
}

/// Only the bulk enqueue, for a profile: 100,000 jobs in calls of 1,000.
async fn bulk_only(url: &str) -> Result<(), JobError> {
    let jobs = store(url).await?;
    let bench = bench_id();
    let started = Instant::now();
    for chunk in 0..100u64 {
        let items = (chunk * 1_000..(chunk + 1) * 1_000).map(|n| Item {
            bench: bench.clone(),
            n,
        });
        enqueue_batch(&jobs, "default", items).await?;
    }
    println!("bulk only: {:.0}/s", rate(100_000, started.elapsed()));
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    let wants = |s: &str| wanted.is_empty() || wanted.iter().any(|w| w == s);
    let single = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6390".into());
    let cluster = std::env::var("REDIS_CLUSTER_URL").ok();
    if wants("memory") {
        memory(&single).await?;
    }
    if wants("idle") {
        idle(&single).await?;
    }
    if wants("lists") {
        lists(&single).await?;
    }
    if wants("ontime") {
        on_time_starts(&single).await?;
    }
    if wanted.iter().any(|w| w == "e2e-only") {
        e2e_only(&single).await?;
    }
    if wanted.iter().any(|w| w == "single-only") {
        single_only(&single).await?;
    }
    if wanted.iter().any(|w| w == "bulk-only") {
        bulk_only(&single).await?;
    }
    if wants("single") {
        throughput(&single, "one server, one queue", ONE_QUEUE).await?;
        throughput(&single, "one server, three queues", THREE_QUEUES).await?;
    }
    if wants("cluster") {
        match &cluster {
            Some(url) => {
                throughput(url, "three-master cluster, one queue", ONE_QUEUE).await?;
                throughput(url, "three-master cluster, three queues", THREE_QUEUES).await?;
            }
            None => println!("cluster: skipped (set REDIS_CLUSTER_URL)"),
        }
    }
    Ok(())
}
