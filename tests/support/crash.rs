//! The crash scenario, on any store ([`CrashStore`]: Postgres and SQLite through
//! `support::store::Store`, Redis through the chaos tests' `RedisStore`, whose side effects go
//! to a Postgres schema of the test's own): a real worker process (`tests/bin/crash_worker.rs`)
//! is SIGKILLed in the middle of a multi-step job; another worker process finishes the job once
//! the visibility timeout lapses. Completed steps are not run again and nothing is lost. And
//! on-time starts: a run parked in a killed process resumes on an idle one when due.
//!
//! Included by path in `processes/main.rs` only (it declares a job):
//! `#[path = "../support/crash.rs"] mod crash;`.

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use jobs::prelude::*;

use crate::chaos::on_redis::store::RedisStore;
use crate::support::pg;
use crate::support::store::Store;
use crate::support::wait;

/// What the scenario needs of a store: a client on its queue, the URL and schema its worker
/// processes are given, and statements on the table of side effects they write.
pub trait CrashStore {
    fn jobs(&self) -> Jobs;
    /// `DATABASE_URL`.
    fn url(&self) -> String;
    /// `JOBS_SCHEMA`, and what the side-effect tables are qualified with.
    fn schema(&self) -> &str;
    /// What else a worker process is given (where its side effects go, when not the queue's
    /// own database).
    fn side_env(&self) -> Vec<(&'static str, String)>;
    async fn exec(&self, sql: &str);
    async fn count(&self, sql: &str) -> i64;
}

impl CrashStore for Store {
    fn jobs(&self) -> Jobs {
        Store::jobs(self)
    }
    fn url(&self) -> String {
        Store::url(self)
    }
    fn schema(&self) -> &str {
        Store::schema(self)
    }
    fn side_env(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    async fn exec(&self, sql: &str) {
        Store::exec(self, sql).await
    }
    async fn count(&self, sql: &str) -> i64 {
        Store::count(self, sql).await
    }
}

impl CrashStore for RedisStore {
    fn jobs(&self) -> Jobs {
        RedisStore::jobs(self)
    }
    fn url(&self) -> String {
        RedisStore::url(self).to_string()
    }
    fn schema(&self) -> &str {
        RedisStore::schema(self)
    }
    fn side_env(&self) -> Vec<(&'static str, String)> {
        vec![("SIDE_DATABASE_URL", pg::database_url().to_string())]
    }
    async fn exec(&self, sql: &str) {
        RedisStore::exec(self, sql).await
    }
    async fn count(&self, sql: &str) -> i64 {
        RedisStore::count(self, sql).await
    }
}

#[derive(Serialize, Deserialize, JsonSchema)]
pub struct Work {
    pub n: u64,
}

/// The same declaration the crash worker runs; only its name and input matter here, to
/// enqueue it.
#[job(key = "two-steps:{n}", tenant = none)]
pub async fn two_steps(_run: Run, _input: Work) -> Result<(), JobError> {
    unreachable!("the crash worker process runs this job")
}

/// The same declaration the crash worker runs (`nap`: a gate, then `run.sleep("2s")`).
#[job(key = "nap:{n}", tenant = none)]
pub async fn nap(_run: Run, _input: Work) -> Result<(), JobError> {
    unreachable!("the crash worker process runs this job")
}

/// A crash worker process on the queue at `url` (in `schema`, on Postgres), once it says it is
/// ready; `env` adds to its environment.
pub fn start_worker(url: &str, schema: &str, env: &[(&str, &str)]) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_crash-worker"));
    command
        .env("DATABASE_URL", url)
        .env("JOBS_SCHEMA", schema)
        .stdout(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("the crash worker starts");
    // Wait (bounded by the process itself) until it says it is ready.
    let mut line = String::new();
    let stdout = child.stdout.take().expect("piped stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
        .expect("the crash worker reports");
    assert_eq!(line.trim(), "ready");
    child
}

fn start_step_worker(store: &impl CrashStore, block: bool) -> Child {
    let block = if block { "1" } else { "0" };
    let side = store.side_env();
    let mut env: Vec<(&str, &str)> = side.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.extend([("VISIBILITY_MS", "1000"), ("BLOCK_SECOND_STEP", block)]);
    start_worker(&store.url(), store.schema(), &env)
}

async fn side_effects(store: &impl CrashStore, step: &str) -> i64 {
    let s = store.schema();
    store
        .count(&format!(
            "select count(*) from {s}.side_effects where step = '{step}'"
        ))
        .await
}

/// The scenario: kill mid-step, finish elsewhere, count the step executions.
pub async fn a_killed_worker_s_job_is_finished_by_another(store: &impl CrashStore) {
    let s = store.schema();
    store
        .exec(&format!(
            "create table {s}.side_effects (run_id uuid not null, step text not null, pid int not null)"
        ))
        .await;
    let jobs = store.jobs();
    let queued = TwoSteps::enqueue(&jobs, Work { n: 1 })
        .await
        .expect("enqueue");

    let mut first = start_step_worker(store, true);
    wait::until(
        Duration::from_secs(30),
        "the second step to start",
        || async { side_effects(store, "second-start").await > 0 },
    )
    .await;
    // SIGKILL: no shutdown, no settle, the claim is simply abandoned.
    first.kill().expect("SIGKILL the first worker");
    first.wait().expect("reap the first worker");
    let row = jobs.job(queued.id).await.expect("read").expect("exists");
    assert_eq!(
        row.state,
        JobState::Running,
        "nothing settled the killed run"
    );

    let mut second = start_step_worker(store, false);
    wait::until(Duration::from_secs(30), "the job to finish", || async {
        jobs.job(queued.id)
            .await
            .expect("read")
            .expect("exists")
            .state
            == JobState::Done
    })
    .await;
    second.kill().expect("stop the second worker");
    second.wait().expect("reap the second worker");

    let row = jobs.job(queued.id).await.expect("read").expect("exists");
    assert_eq!(row.state, JobState::Done);
    assert_eq!(
        row.attempt, 2,
        "the killed attempt counts, the second finished it"
    );
    assert_eq!(
        side_effects(store, "first").await,
        1,
        "a completed step never runs again"
    );
    assert_eq!(
        side_effects(store, "second-start").await,
        2,
        "the interrupted step ran again"
    );
    assert_eq!(side_effects(store, "second-done").await, 1);
    println!("crash test: job {} done on attempt {}", row.id, row.attempt);
}

/// On-time starts across processes: a run parked by `run.sleep("2s")` in worker process A,
/// which is then SIGKILLed, resumes on idle worker process B, whose poll comes every 20 s,
/// close to its due time: B's wake watcher heard the park's due time and its timer kicked a
/// claim. The bound is generous (1 s); the target (100 ms at p95) belongs to the benchmark.
pub async fn a_parked_run_resumes_on_time_on_another_process(store: &impl CrashStore) {
    let s = store.schema();
    store
        .exec(&format!(
            "create table {s}.side_effects (run_id uuid not null, step text not null, pid int not null)"
        ))
        .await;
    store
        .exec(&format!("create table {s}.nap_gate (open int not null)"))
        .await;
    let jobs = store.jobs();
    let side = store.side_env();
    let side: Vec<(&str, &str)> = side.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut parker = start_worker(&store.url(), s, &side);
    let queued = Nap::enqueue(&jobs, Work { n: 1 }).await.expect("enqueue");
    wait::until(Duration::from_secs(30), "the nap to start", || async {
        side_effects(store, "nap-start").await > 0
    })
    .await;
    // The idle worker: it polls every 20 s, so only the due wake can start the run on time.
    let mut env = side.clone();
    env.push(("POLL_MS", "20000"));
    let mut idle = start_worker(&store.url(), s, &env);
    wait::until(
        Duration::from_secs(30),
        "both workers to be listed",
        || async {
            jobs.operator()
                .workers()
                .await
                .map(|w| w.len() >= 2)
                .unwrap_or(false)
        },
    )
    .await;
    store
        .exec(&format!("insert into {s}.nap_gate (open) values (1)"))
        .await;
    wait::until(Duration::from_secs(30), "the run to park", || async {
        jobs.job(queued.id)
            .await
            .expect("read")
            .expect("exists")
            .state
            == JobState::Suspended
    })
    .await;
    parker
        .kill()
        .expect("SIGKILL the worker that parked the run");
    parker.wait().expect("reap it");
    let parked = jobs.job(queued.id).await.expect("read").expect("exists");
    assert_eq!(parked.state, JobState::Suspended);
    wait::until(Duration::from_secs(30), "the run to finish", || async {
        jobs.job(queued.id)
            .await
            .expect("read")
            .expect("exists")
            .state
            == JobState::Done
    })
    .await;
    let done = jobs.job(queued.id).await.expect("read").expect("exists");
    let idle_pid = idle.id() as i64;
    idle.kill().expect("stop the idle worker");
    idle.wait().expect("reap it");
    let late = (done.updated_at - parked.run_at)
        .to_std()
        .unwrap_or_default();
    println!(
        "on-time resume: due {} finished {late:?} later",
        parked.run_at
    );
    assert!(
        late <= Duration::from_secs(1),
        "the parked run resumed {late:?} after its due time, not within 1 s"
    );
    assert_eq!(
        store
            .count(&format!(
                "select count(*) from {s}.side_effects where step = 'nap-resumed' and pid = {idle_pid}"
            ))
            .await,
        1,
        "the idle worker resumed it"
    );
}
