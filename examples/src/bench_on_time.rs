//! The `ontime` scenario the three benchmark binaries share (`bench`, `bench-sqlite`,
//! `bench-redis`, each with `#[path]`): the job, the writer's part (first attempts run by a
//! worker driven by hand, then the delayed enqueues) and the lateness table. Not a module of
//! the examples library: its job would then be linked into the `manifest` binary.

use std::time::Duration;

use jobs::prelude::*;
use jobs::{EnqueueOptions, Worker};

/// A delayed job: does nothing.
pub const KIND_DELAYED: u8 = 0;
/// A retry: its first attempt fails with a stated delay of `delay_ms`.
pub const KIND_RETRY: u8 = 1;
/// A park: sleeps `delay_ms`.
pub const KIND_PARK: u8 = 2;
/// Every kind, as the table names it.
pub const KINDS: [(u8, &str); 3] = [
    (KIND_DELAYED, "delayed job"),
    (KIND_RETRY, "retry after backoff"),
    (KIND_PARK, "parked sleep"),
];

/// Jobs of each kind.
pub const ON_TIME_JOBS: u64 = 40;

/// One `ontime` job.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Due {
    /// The run's id, so keys never meet a row of an earlier run.
    pub bench: String,
    /// Its number (retries and parks add 1,000 times their kind).
    pub n: u64,
    /// One of the kinds above.
    pub kind: u8,
    /// The retry's stated delay or the park's sleep.
    pub delay_ms: u64,
}

/// Which client runs an `ontime` job: the writer (the first attempts) or the idle worker.
pub struct Role {
    /// `true` on the writer.
    pub writer: bool,
}

/// When job `n` of `kind` is due, in ms from its writing: 2 to 6 s later, 100 ms apart.
pub fn due_in(n: u64, kind: u8) -> u64 {
    2_000 + n * 100 + u64::from(kind) * 33
}

/// A delayed job does nothing; a retry fails its first attempt with a backoff of `delay_ms`; a
/// park sleeps `delay_ms`. A first attempt the idle worker takes by chance fails for good, so
/// it is not measured.
#[job(name = "bench.on_time", queue = "ontime", key = "ontime:{bench}:{n}", tenant = none, retry(attempts = 3, jitter = none))]
pub async fn on_time(run: Run, input: Due) -> Result<(), JobError> {
    let role = run.context::<Role>()?;
    let unmeasured = || JobError::terminal("a first attempt on the idle worker is not measured");
    match input.kind {
        KIND_RETRY if run.attempt() == 1 => {
            if !role.writer {
                return Err(unmeasured());
            }
            Err(JobError::retry_after(
                "the first attempt fails",
                Duration::from_millis(input.delay_ms),
            ))
        }
        KIND_PARK => {
            let writer = role.writer;
            let by_writer: bool = run
                .step("first", async move { Ok::<_, JobError>(writer) })
                .await?;
            if !by_writer {
                return Err(unmeasured());
            }
            run.sleep(Duration::from_millis(input.delay_ms)).await?;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The idle worker: default settings but its slots, started by the caller.
pub fn idle(jobs: &Jobs, slots: u32) -> Result<Worker, JobError> {
    jobs.worker()
        .queues(["ontime"])
        .concurrency(slots)
        .context(std::sync::Arc::new(Role { writer: false }))
        .build()
}

/// The writer's worker: driven by hand (`tick`), so it arms no timer of its own.
pub fn writer(jobs: &Jobs) -> Result<Worker, JobError> {
    jobs.worker()
        .queues(["ontime"])
        .concurrency(256)
        .context(std::sync::Arc::new(Role { writer: true }))
        .build()
}

/// Runs the first attempts of `first` queued retries and parks on the writer, pass after pass
/// (a pass may claim fewer than are due); with `wait_when_empty` an empty pass waits 10 ms and
/// tries again, else it ends the loop (the idle worker took the rest).
pub async fn run_first_attempts(
    writer: &Worker,
    first: usize,
    wait_when_empty: bool,
) -> Result<(), JobError> {
    let mut ran_total = 0;
    for _ in 0..100 {
        if ran_total >= first {
            break;
        }
        let ran = writer.tick().await?;
        if ran.is_empty() {
            if !wait_when_empty {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        ran_total += ran.len();
    }
    Ok(())
}

/// Enqueues the delayed jobs, each due [`due_in`] from now; answers their ids.
pub async fn enqueue_delayed(jobs: &Jobs, bench: &str) -> Result<Vec<uuid::Uuid>, JobError> {
    let mut ids = Vec::new();
    for n in 0..ON_TIME_JOBS {
        let due = Due {
            bench: bench.to_string(),
            n,
            kind: KIND_DELAYED,
            delay_ms: 0,
        };
        let delay = Duration::from_millis(due_in(n, KIND_DELAYED));
        let enqueued = OnTime::enqueue_with(jobs, due, EnqueueOptions::new().delay(delay)).await?;
        ids.push(enqueued.id);
    }
    Ok(ids)
}

/// The table's rows for each kind: `late` holds every measured row as (kind, ms late);
/// `measured` names what the lateness runs to ("start", "start and ack").
pub fn lateness_rows(late: &[(u8, f64)], measured: &str) -> Vec<(String, String)> {
    KINDS
        .iter()
        .map(|&(kind, what)| {
            let mut ms: Vec<f64> = late
                .iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, ms)| *ms)
                .collect();
            ms.sort_by(|a, b| a.total_cmp(b));
            if ms.is_empty() {
                return (
                    format!("on-time {measured}, {what}"),
                    "none measured".into(),
                );
            }
            let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
            (
                format!(
                    "on-time {measured}, {what}: late by p50 / p95 / max ms ({} jobs)",
                    ms.len()
                ),
                format!("{:.1} / {:.1} / {:.1}", at(0.5), at(0.95), at(1.0)),
            )
        })
        .collect()
}

/// The kind of a stored `ontime` input.
pub fn kind_of(input: &serde_json::Value) -> u8 {
    input["kind"].as_u64().map_or(u8::MAX, |k| k as u8)
}
