//! A real worker process is SIGKILLed in the middle of a multi-step job; another worker process
//! finishes the job once the visibility timeout lapses. Completed steps are not run again and
//! nothing is lost.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};
use support::pg;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Work {
    n: u64,
}

/// The same declaration the crash worker runs (`tests/bin/crash_worker.rs`); only its name and
/// input matter here, to enqueue it.
#[job(key = "two-steps:{n}", tenant = none)]
async fn two_steps(_run: Run, _input: Work) -> Result<(), JobError> {
    unreachable!("the crash worker process runs this job")
}

fn start_worker(schema: &str, block: bool) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crash-worker"))
        .env("DATABASE_URL", pg::database_url())
        .env("JOBS_SCHEMA", schema)
        .env("VISIBILITY_MS", "1000")
        .env("BLOCK_SECOND_STEP", if block { "1" } else { "0" })
        .stdout(Stdio::piped())
        .spawn()
        .expect("the crash worker starts");
    // Wait (bounded by the process itself) until it says it is ready.
    let mut line = String::new();
    let stdout = child.stdout.take().expect("piped stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
        .expect("the crash worker reports");
    assert_eq!(line.trim(), "ready");
    child
}

async fn side_effects(pool: &sqlx::PgPool, schema: &str, step: &str) -> i64 {
    let sql = format!("select count(*) from {schema}.side_effects where step = $1");
    sqlx::query_scalar(AssertSqlSafe(sql))
        .bind(step)
        .fetch_one(pool)
        .await
        .expect("count side effects")
}

/// Waits for `condition`, checking every 20 ms, for at most `bound`.
async fn wait_until<F, Fut>(bound: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + bound;
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_s_job_is_finished_by_another_without_rerunning_completed_steps() {
    let (pool, schema) = pg::schema("crash_kill_mid_step").await;
    let create = format!(
        "create table {schema}.side_effects (run_id uuid not null, step text not null, pid int not null)"
    );
    sqlx::query(AssertSqlSafe(create))
        .execute(&pool)
        .await
        .expect("side effects table");
    let jobs = Jobs::new(PostgresDriver::new(pool.clone(), &schema).expect("schema"));
    let queued = TwoSteps::enqueue(&jobs, Work { n: 1 })
        .await
        .expect("enqueue");

    let mut first = start_worker(&schema, true);
    wait_until(Duration::from_secs(30), "the second step to start", || {
        side_effects(&pool, &schema, "second-start").map_into_bool()
    })
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

    let mut second = start_worker(&schema, false);
    wait_until(Duration::from_secs(30), "the job to finish", || async {
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
        side_effects(&pool, &schema, "first").await,
        1,
        "a completed step never runs again"
    );
    assert_eq!(
        side_effects(&pool, &schema, "second-start").await,
        2,
        "the interrupted step ran again"
    );
    assert_eq!(side_effects(&pool, &schema, "second-done").await, 1);
    println!("crash test: job {} done on attempt {}", row.id, row.attempt);
}

trait MapIntoBool {
    async fn map_into_bool(self) -> bool;
}

impl<F: std::future::Future<Output = i64>> MapIntoBool for F {
    async fn map_into_bool(self) -> bool {
        self.await > 0
    }
}
