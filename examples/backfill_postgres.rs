//! A backfill over 100,000 rows in Postgres, killed halfway and resumed.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo run --release --example backfill_postgres
//! ```
//!
//! The example fills `users.display_name` from `users.email` with a `#[backfill]` (keyset pages
//! of 1,000 rows, 25 pages per second). It runs the worker as a child process (this same
//! binary with `worker`), SIGKILLs it once half the rows are done, starts another, and shows
//! the pass resuming on the page it stopped at: the pages checkpointed before the kill are
//! never read or written again.
//!
//! One run here (release build, Postgres on localhost, one worker process at a time): the
//! first worker filled 50,000 rows (50 pages) in 2.09 s, 23,961 rows/s against the pacer's
//! 25,000 (25 pages/s of 1,000), and was SIGKILLed; the second took the lapsed claim over (2 s
//! visibility) and resumed on page 50, as attempt 2; the pass completed 100,000 rows in 101
//! pages (the last one empty) in 6.23 s end to end, 16,054 rows/s with the kill and the
//! takeover included. The printout gives the figures of each run.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jobs::backfill::PassStatus;
use jobs::driver::backfill_store::BackfillListParams;
use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe, Row};

const SCHEMA: &str = "backfill_demo";
const ROWS: i64 = 100_000;

struct Db {
    pool: sqlx::PgPool,
}

#[derive(Debug)]
struct UserId(i64);

/// Keyset over the primary key: one statement per page, never OFFSET.
async fn users_after(
    pass: Pass,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<UserId, i64>, JobError> {
    let db = pass.context::<Db>()?;
    let rows = sqlx::query(AssertSqlSafe(format!(
        "select id from {SCHEMA}.users where id > $1 order by id limit $2"
    )))
    .bind(after.unwrap_or(0))
    .bind(i64::from(limit))
    .fetch_all(&db.pool)
    .await?;
    let ids = rows
        .iter()
        .map(|r| r.try_get("id").map(UserId))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::keyed(ids, |id| id.0))
}

/// One page: an idempotent `update .. where id = any(..)` (a page runs at least once).
#[backfill(name = "users.display-name", tenant = none, source = users_after, batch = 1000, rate = 25.0)]
async fn fill_display_name(pass: Pass, rows: Vec<UserId>) -> Result<(), JobError> {
    let db = pass.context::<Db>()?;
    let ids: Vec<i64> = rows.iter().map(|r| r.0).collect();
    sqlx::query(AssertSqlSafe(format!(
        "update {SCHEMA}.users set display_name = split_part(email, '@', 1) where id = any($1)"
    )))
    .bind(&ids)
    .execute(&db.pool)
    .await?;
    Ok(())
}

fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

async fn driver() -> Result<PostgresDriver, JobError> {
    PostgresDriver::connect(&database_url())
        .await?
        .with_schema(SCHEMA)
}

/// The child: a worker process running the backfill until it is killed.
async fn worker() -> Result<(), JobError> {
    let driver = driver().await?;
    let db = Db {
        pool: driver.pool().clone(),
    };
    let jobs = Jobs::new(driver);
    let worker = jobs
        .worker()
        .visibility_timeout(Duration::from_secs(2))
        .poll_interval(Duration::from_millis(50))
        .idle_poll_max(Duration::from_millis(200))
        .context(Arc::new(db))
        .build()?;
    let _running = worker.start();
    println!("ready");
    std::future::pending::<()>().await;
    Ok(())
}

/// A worker process; killed (SIGKILL) and reaped when dropped.
struct WorkerProcess(Child);

impl WorkerProcess {
    /// SIGKILL: no drain, no settle, the claim is simply abandoned.
    fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_worker() -> WorkerProcess {
    let mut child = Command::new(std::env::current_exe().expect("this binary"))
        .arg("worker")
        .stdout(Stdio::piped())
        .spawn()
        .expect("the worker process starts");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("piped stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
        .expect("the worker reports");
    assert_eq!(line.trim(), "ready");
    WorkerProcess(child)
}

async fn filled(pool: &sqlx::PgPool) -> Result<i64, JobError> {
    Ok(sqlx::query_scalar(AssertSqlSafe(format!(
        "select count(*) from {SCHEMA}.users where display_name is not null"
    )))
    .fetch_one(pool)
    .await?)
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    if std::env::args().nth(1).as_deref() == Some("worker") {
        return worker().await;
    }
    let driver = driver().await?;
    let pool = driver.pool().clone();
    sqlx::raw_sql(AssertSqlSafe(format!(
        "drop schema if exists {SCHEMA} cascade"
    )))
    .execute(&pool)
    .await?;
    driver.migrate().await?;
    sqlx::raw_sql(AssertSqlSafe(format!(
        "create table {SCHEMA}.users (id bigint primary key, email text not null, display_name text);
         insert into {SCHEMA}.users (id, email)
             select g, 'user' || g || '@example.com' from generate_series(1, {ROWS}) g;"
    )))
    .execute(&pool)
    .await?;
    println!("{ROWS} users without a display name");

    let jobs = Jobs::new(driver);
    let queued = FillDisplayName::enqueue(&jobs).await?;
    let started = Instant::now();
    let first = start_worker();
    while filled(&pool).await? < ROWS / 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    first.kill();
    let first_run = started.elapsed();
    let at_kill = filled(&pool).await?;
    let pass = &jobs.backfills().list(BackfillListParams::default()).await?[0];
    let checkpointed = pass.batches;
    println!(
        "SIGKILLed the worker after {:.2} s: {at_kill} rows filled, {checkpointed} pages checkpointed ({:.0} rows/s)",
        first_run.as_secs_f64(),
        at_kill as f64 / first_run.as_secs_f64()
    );

    let resumed = Instant::now();
    let second = start_worker();
    loop {
        let job = jobs.job(queued.id).await?.expect("the pass's job");
        if job.state == JobState::Done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let second_run = resumed.elapsed();
    second.kill();

    let pass = &jobs.backfills().list(BackfillListParams::default()).await?[0];
    assert_eq!(pass.status, PassStatus::Completed);
    assert_eq!(filled(&pool).await?, ROWS);
    let job = jobs.job(queued.id).await?.expect("the pass's job");
    let total = started.elapsed();
    println!(
        "a second worker took the lapsed claim over and resumed on page {checkpointed}: {} more rows in {:.2} s, attempt {}",
        ROWS - at_kill,
        second_run.as_secs_f64(),
        job.attempt
    );
    println!(
        "pass completed: {} rows in {} pages; {:.0} rows/s end to end ({:.2} s, kill and takeover included)",
        pass.rows,
        pass.batches,
        ROWS as f64 / total.as_secs_f64(),
        total.as_secs_f64()
    );
    Ok(())
}
