//! Fleet-wide concurrency for real: three worker processes share one Postgres queue, and a job
//! declaring `concurrency = 2` never has more than two runs in flight across all of them.

use crate::support;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};
use support::pg;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Capped {
    n: u64,
}

/// The declaration the worker processes run (tests/bin/crash_worker.rs); here only to enqueue.
#[job(key = "capped:{n}", tenant = none, concurrency = 2)]
async fn capped_work(_run: Run, _input: Capped) -> Result<(), JobError> {
    unreachable!("the worker processes run this job")
}

fn start_worker(schema: &str) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crash-worker"))
        .env("DATABASE_URL", pg::database_url())
        .env("JOBS_SCHEMA", schema)
        .env("VISIBILITY_MS", "5000")
        .stdout(Stdio::piped())
        .spawn()
        .expect("a worker process starts");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("piped stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
        .expect("the worker reports");
    assert_eq!(line.trim(), "ready");
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_worker_processes_never_run_more_than_the_cap_at_once() {
    let (pool, schema) = pg::schema("concurrency_processes").await;
    for table in [
        "create table {s}.side_effects (run_id uuid, step text, pid int)",
        "create table {s}.runs (job_id uuid primary key, pid int not null, started_at timestamptz not null, ended_at timestamptz)",
    ] {
        sqlx::query(AssertSqlSafe(table.replace("{s}", &schema)))
            .execute(&pool)
            .await
            .expect("table");
    }
    let jobs = Jobs::new(PostgresDriver::new(pool.clone(), &schema).expect("schema"));
    const JOBS: u64 = 12;
    CappedWork::enqueue_many(&jobs, (0..JOBS).map(|n| Capped { n }))
        .await
        .expect("enqueue");
    let mut workers: Vec<Child> = (0..3).map(|_| start_worker(&schema)).collect();

    let done = format!("select count(*) from {schema}.runs where ended_at is not null");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let finished: i64 = sqlx::query_scalar(AssertSqlSafe(done.clone()))
            .fetch_one(&pool)
            .await
            .expect("count");
        if finished == JOBS as i64 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {finished} of {JOBS} ran"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for worker in &mut workers {
        worker.kill().expect("stop a worker");
        worker.wait().expect("reap a worker");
    }

    // At every run's start, how many runs were in flight (itself included)?
    let overlap = format!(
        "select max((select count(*) from {schema}.runs o
                     where o.started_at <= r.started_at and o.ended_at > r.started_at))
         from {schema}.runs r"
    );
    let most: i64 = sqlx::query_scalar(AssertSqlSafe(overlap))
        .fetch_one(&pool)
        .await
        .expect("overlap");
    let pids = format!("select count(distinct pid) from {schema}.runs");
    let processes: i64 = sqlx::query_scalar(AssertSqlSafe(pids))
        .fetch_one(&pool)
        .await
        .expect("pids");
    println!("{JOBS} capped runs over {processes} processes, at most {most} at once");
    assert!(most <= 2, "{most} runs in flight at once over a cap of 2");
    assert!(most >= 1);
    let attempts = format!("select max(attempt) from {schema}.x_jobs");
    let attempt: i32 = sqlx::query_scalar(AssertSqlSafe(attempts))
        .fetch_one(&pool)
        .await
        .expect("attempts");
    assert_eq!(attempt, 1, "a shed never spends an attempt");
}
