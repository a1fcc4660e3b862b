//! A consumer reading a Postgres table by keyset while rows arrive, kept running by its
//! supervisor.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo run --release --example consumer_postgres
//! ```
//!
//! An app appends to `events`; the `#[consumer]` copies every new row into `totals` (an
//! idempotent upsert: delivery is at least once), in laps of up to 20 pages of 500 rows, each
//! page's cursor in its own durable step; a lap that stops at its limit enqueues the next at
//! once, one that caught up enqueues it 200 ms later. A worker and a scheduler run in this
//! process; the supervisor task starts the first lap at once (and would restart a dead one
//! within the minute). The printout shows how far behind the consumer was while 50,000 rows
//! were written, and when it had read them all.
//!
//! One run here (release build, Postgres on localhost, 2 cores): 50,000 events written in
//! 1.17 s, the consumer 5,000 to 25,000 behind meanwhile; every event copied 2.64 s after the
//! last was written, 13,039 events/s overall.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};

const SCHEMA: &str = "consumer_demo";
const ROWS: i64 = 50_000;

struct Db {
    pool: sqlx::PgPool,
}

#[derive(Debug)]
struct Event {
    id: i64,
}

/// Keyset over the primary key: the events after the cursor.
async fn events_after(
    pass: Pass,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<Event, i64>, JobError> {
    let db = pass.context::<Db>()?;
    let ids: Vec<i64> = sqlx::query_scalar(AssertSqlSafe(format!(
        "select id from {SCHEMA}.events where id > $1 order by id limit $2"
    )))
    .bind(after.unwrap_or(0))
    .bind(i64::from(limit))
    .fetch_all(&db.pool)
    .await?;
    Ok(Page::keyed(
        ids.into_iter().map(|id| Event { id }).collect(),
        |e| e.id,
    ))
}

/// One page: an idempotent copy (a page whose lap died before recording it is read again).
#[consumer(name = "events.totals", source = events_after, batch = 500, lap = 20, poll = "200ms")]
async fn copy_events(pass: Pass, events: Vec<Event>) -> Result<(), JobError> {
    let db = pass.context::<Db>()?;
    let ids: Vec<i64> = events.iter().map(|e| e.id).collect();
    sqlx::query(AssertSqlSafe(format!(
        "insert into {SCHEMA}.totals (id) select unnest($1::bigint[]) on conflict (id) do nothing"
    )))
    .bind(&ids)
    .execute(&db.pool)
    .await?;
    Ok(())
}

async fn count(pool: &sqlx::PgPool, table: &str) -> Result<i64, JobError> {
    Ok(sqlx::query_scalar(AssertSqlSafe(format!(
        "select count(*) from {SCHEMA}.{table}"
    )))
    .fetch_one(pool)
    .await?)
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
    let driver = PostgresDriver::connect(&url).await?.with_schema(SCHEMA)?;
    let pool = driver.pool().clone();
    sqlx::raw_sql(AssertSqlSafe(format!(
        "drop schema if exists {SCHEMA} cascade"
    )))
    .execute(&pool)
    .await?;
    driver.migrate().await?;
    sqlx::raw_sql(AssertSqlSafe(format!(
        "create table {SCHEMA}.events (id bigserial primary key, at timestamptz not null default now());
         create table {SCHEMA}.totals (id bigint primary key);"
    )))
    .execute(&pool)
    .await?;

    let jobs = Jobs::new(driver);
    let worker = jobs
        .worker()
        .poll_interval(Duration::from_millis(50))
        .context(Arc::new(Db { pool: pool.clone() }))
        .build()?;
    let _working = worker.start();
    let _scheduling = jobs.scheduler().build()?.start();
    // The supervisor's first lap now rather than at the next minute.
    jobs::fire_now::<CopyEventsSupervisor>(&jobs).await?;

    let started = Instant::now();
    let mut written = 0;
    while written < ROWS {
        sqlx::query(AssertSqlSafe(format!(
            "insert into {SCHEMA}.events (at) select now() from generate_series(1, 1000)"
        )))
        .execute(&pool)
        .await?;
        written += 1000;
        if written % 10_000 == 0 {
            let copied = count(&pool, "totals").await?;
            println!(
                "{:>5.2} s: {written} events written, {copied} copied ({} behind)",
                started.elapsed().as_secs_f64(),
                written - copied
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let writing = started.elapsed();
    while count(&pool, "totals").await? < ROWS {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let all = started.elapsed();
    println!(
        "all {ROWS} events copied {:.2} s after the last was written ({:.0} events/s overall)",
        (all - writing).as_secs_f64(),
        ROWS as f64 / all.as_secs_f64()
    );
    Ok(())
}
