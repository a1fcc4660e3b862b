//! What an idle worker costs the database: every statement it issues in a quiet minute.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1/postgres cargo run --example idle_cost
//! ```
//!
//! It creates a database of its own (`jobs_idle_cost`, dropped and made anew), migrates it,
//! starts one worker over an empty queue, waits for the worker to prove its push wake, then
//! counts for `IDLE_SECONDS` (default 60) the transactions Postgres committed in that
//! database (`pg_stat_database.xact_commit`: every statement outside an explicit transaction
//! is one) beside the claims the worker reports. The counting connection is in another
//! database, so it does not count itself, and autovacuum is off for the queue's tables, so its
//! passes are not counted either.

use std::time::{Duration, Instant};

use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::sqlx::{self, Connection, PgConnection};

const DATABASE: &str = "jobs_idle_cost";

#[input]
struct Ping {
    id: u64,
}

#[job(key = "nothing:{id}", tenant = none)]
async fn nothing(_run: Run, _input: Ping) -> Result<(), JobError> {
    Ok(())
}

async fn committed(admin: &mut PgConnection) -> Result<i64, sqlx::Error> {
    // The statistics snapshot is per transaction: clear it so each read is fresh.
    sqlx::query("select pg_stat_clear_snapshot()")
        .execute(&mut *admin)
        .await?;
    sqlx::query_scalar("select xact_commit from pg_stat_database where datname = $1")
        .bind(DATABASE)
        .fetch_one(&mut *admin)
        .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string());
    let seconds: u64 = std::env::var("IDLE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let mut admin = PgConnection::connect(&url).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "drop database if exists {DATABASE} with (force)"
    )))
    .execute(&mut admin)
    .await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("create database {DATABASE}")))
        .execute(&mut admin)
        .await?;
    let own_url = match url.rfind('/') {
        Some(slash) => format!("{}/{DATABASE}", &url[..slash]),
        None => return Err("DATABASE_URL has no database part".into()),
    };
    let driver = PostgresDriver::connect(&own_url).await?;
    driver.migrate().await?;
    // Autovacuum's passes are transactions of this database too: keep them out of the count.
    let mut own = PgConnection::connect(&own_url).await?;
    let tables: Vec<String> = sqlx::query_scalar(
        "select format('%I.%I', schemaname, tablename) from pg_tables where schemaname = 'public'",
    )
    .fetch_all(&mut own)
    .await?;
    for table in tables {
        let sql = format!("alter table {table} set (autovacuum_enabled = false)");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut own)
            .await?;
    }
    own.close().await?;
    let jobs = Jobs::new(driver);
    let worker = jobs.worker().concurrency(16).build()?;
    let running = worker.start();
    // Let the worker settle: connect its pinned sessions, LISTEN, prove the wake.
    Nothing::enqueue(&jobs, Ping { id: 1 }).await?;
    tokio::time::sleep(Duration::from_secs(15)).await;

    let (xacts_before, claims_before) = (committed(&mut admin).await?, worker.stats().claims);
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let (xacts_after, claims_after) = (committed(&mut admin).await?, worker.stats().claims);
    let minutes = started.elapsed().as_secs_f64() / 60.0;
    running.shutdown().await;

    let per_minute = |n: i64| n as f64 / minutes;
    let xacts = xacts_after - xacts_before;
    let claims = (claims_after - claims_before) as i64;
    println!(
        "idle worker over {seconds} s: {:.1} statements a minute in all: {:.1} claims and {:.1} \
         others (the refresh of its registry row)",
        per_minute(xacts),
        per_minute(claims),
        per_minute(xacts - claims)
    );
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "drop database if exists {DATABASE} with (force)"
    )))
    .execute(&mut admin)
    .await?;
    Ok(())
}
