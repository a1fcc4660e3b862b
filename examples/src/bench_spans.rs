//! `bench spans`: work that spans jobs on Postgres. Ten parents fanning out to 1,000 no-op
//! children each with `run.invoke_all` and in again, side by side (jobs/s), then one at a time
//! (how long after its last child's body ended each parent resumed), and a batch of 10,000 members with its callback; each beside
//! the same number of no-op jobs enqueued in bulk and drained plain in the same run, the per-job
//! reference.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{bench_id, fresh, median, rate, runs, Fan, Item, Spread, Table, SLOTS};
use super::{BatchTally, Leaf, Noop};
use jobs::prelude::*;

/// Children per parent.
const CHILDREN: u64 = 1_000;
/// Parents per run, one after the other: each gives one resume latency.
const PARENTS: u64 = 10;
/// Members of the batch.
const MEMBERS: u64 = 10_000;

static EPOCH: OnceLock<Instant> = OnceLock::new();
static LAST_CHILD: AtomicU64 = AtomicU64::new(0);
static RESUMED: AtomicU64 = AtomicU64::new(0);

fn since_epoch() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// A child's body ended now.
pub fn child_ended() {
    LAST_CHILD.fetch_max(since_epoch(), Ordering::SeqCst);
}

/// The parent (or the callback) resumed now.
pub fn parent_resumed() {
    RESUMED.store(since_epoch(), Ordering::SeqCst);
}

/// Waits until `done()` or two minutes.
async fn until(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// `total` no-op jobs enqueued in bulk and drained by one worker of [`SLOTS`]: jobs/s from the
/// first enqueue to the last completion.
async fn plain(jobs: &Jobs, total: u64) -> Result<f64, JobError> {
    let bench = bench_id();
    let worker = jobs.worker().concurrency(SLOTS).build()?;
    let running = worker.start();
    let started = Instant::now();
    for chunk in 0..total.div_ceil(5_000) {
        let inputs = (chunk * 5_000..((chunk + 1) * 5_000).min(total)).map(|n| Item {
            bench: bench.clone(),
            n,
        });
        jobs.enqueue_many::<Noop, _>(inputs).await?;
    }
    until(|| worker.stats().completed >= total).await;
    let took = started.elapsed();
    running.shutdown().await;
    Ok(rate(worker.stats().completed as usize, took))
}

fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let at = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[at]
}

/// Parents of [`CHILDREN`] children each, one after the other.
pub async fn fan_out_fan_in(table: &mut Table) -> Result<(), JobError> {
    let (mut fanned, mut plains, mut latencies) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs() {
        let jobs = Jobs::new(fresh("bench_spans").await?);
        plains.push(plain(&jobs, (CHILDREN + 1) * PARENTS).await?);
        // Throughput: the parents enqueued together, their children drained side by side.
        let jobs = Jobs::new(fresh("bench_spans").await?);
        let worker = jobs.worker().concurrency(SLOTS).build()?;
        let running = worker.start();
        let bench = bench_id();
        let started = Instant::now();
        for n in 0..PARENTS {
            let spread = Spread {
                bench: bench.clone(),
                n,
                children: CHILDREN,
            };
            jobs.enqueue::<Fan>(spread).await?;
        }
        until(|| worker.stats().completed >= (CHILDREN + 1) * PARENTS).await;
        let took = started.elapsed();
        running.shutdown().await;
        fanned.push(rate(worker.stats().completed as usize, took));
        // The resume latency: one parent at a time, so its last child is its own.
        let jobs = Jobs::new(fresh("bench_spans").await?);
        let worker = jobs.worker().concurrency(SLOTS).build()?;
        let running = worker.start();
        let bench = bench_id();
        for n in 0..PARENTS {
            let before = worker.stats().completed;
            let spread = Spread {
                bench: bench.clone(),
                n,
                children: CHILDREN,
            };
            jobs.enqueue::<Fan>(spread).await?;
            until(|| worker.stats().completed > before + CHILDREN).await;
            let (last, resumed) = (
                LAST_CHILD.load(Ordering::SeqCst),
                RESUMED.load(Ordering::SeqCst),
            );
            latencies.push(resumed.saturating_sub(last) as f64 / 1e6);
        }
        running.shutdown().await;
    }
    let (fanned, plain) = (median(fanned), median(plains));
    table.add(
        "fan-out/fan-in, 10 parents of 1,000 children each, jobs/s",
        format!(
            "{fanned:.0} ({:.2}x the cost a job of the same jobs enqueued in bulk and drained plain, {plain:.0}/s, in the same run)",
            plain / fanned
        ),
    );
    table.add(
        "a parent's resume after its last child, p50 / p95 ms",
        format!(
            "{:.1} / {:.1} ({} parents)",
            percentile(latencies.clone(), 0.5),
            percentile(latencies.clone(), 0.95),
            latencies.len()
        ),
    );
    Ok(())
}

/// A batch of [`MEMBERS`] added in chunks of 1,000, closed, drained; its callback's start after
/// the last member's body ended.
pub async fn batch(table: &mut Table) -> Result<(), JobError> {
    let (mut batched, mut plains, mut latencies) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs() {
        let jobs = Jobs::new(fresh("bench_spans").await?);
        plains.push(plain(&jobs, MEMBERS + 1).await?);
        let jobs = Jobs::new(fresh("bench_spans").await?);
        let worker = jobs.worker().concurrency(SLOTS).build()?;
        let running = worker.start();
        let bench = bench_id();
        let started = Instant::now();
        let tally = Item {
            bench: bench.clone(),
            n: 0,
        };
        let open = jobs.batch::<BatchTally>(tally).await?;
        for chunk in 0..MEMBERS / 1_000 {
            let members = (chunk * 1_000..(chunk + 1) * 1_000).map(|n| Item {
                bench: bench.clone(),
                n,
            });
            open.add::<Leaf, _>(members).await?;
        }
        open.close().await?;
        until(|| worker.stats().completed > MEMBERS).await;
        let took = started.elapsed();
        running.shutdown().await;
        batched.push(rate(worker.stats().completed as usize, took));
        let (last, resumed) = (
            LAST_CHILD.load(Ordering::SeqCst),
            RESUMED.load(Ordering::SeqCst),
        );
        latencies.push(resumed.saturating_sub(last) as f64 / 1e6);
    }
    let (batched, plain) = (median(batched), median(plains));
    table.add(
        "batch of 10,000 with its callback, jobs/s",
        format!(
            "{batched:.0} ({:.2}x the cost a job of the same jobs enqueued in bulk and drained plain, {plain:.0}/s, in the same run; callback started {:.1} ms after the last member, median)",
            plain / batched,
            median(latencies)
        ),
    );
    Ok(())
}
