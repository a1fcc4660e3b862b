//! The queue a worker process of the process tests runs on, picked from the URL it is given
//! (`sqlite://...` is a SQLite file, `redis://...` a Redis server, anything else Postgres), and
//! the database's handle for the side effects its jobs record in the test's tables
//! (`{schema}.side_effects`, ...): the queue's own on Postgres and SQLite; on Redis, which has
//! no tables, a Postgres schema of the test's own named by `SIDE_DATABASE_URL` and
//! `JOBS_SCHEMA`.
//!
//! On SQLite the tables live in the queue's own file and `schema` is `main`, so one statement
//! text (`$1` placeholders, a schema-qualified table) serves all three.

// Each worker binary uses its own part of this module.
#![allow(dead_code)]

use std::str::FromStr;
use std::time::Duration;

use jobs::driver::SqliteDriver;
use jobs::prelude::*;
use jobs::sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use jobs::sqlx::{self, AssertSqlSafe, PgPool, SqlitePool};

/// Whether `url` names a SQLite file.
pub fn is_sqlite(url: &str) -> bool {
    url.starts_with("sqlite:")
}

/// Whether `url` names a Redis server (the side effects then go to `SIDE_DATABASE_URL`).
pub fn is_redis(url: &str) -> bool {
    url.starts_with("redis:")
}

/// A lazy pool of at most 8 connections on the Postgres server at `url`, each carrying
/// `application_name = app` (so a test can find this process's backends). A short acquire
/// timeout: with the server gone, calls fail fast and are retried, rather than queueing behind
/// a dead pool.
pub fn postgres_pool(url: &str, app: &str) -> Result<PgPool, JobError> {
    let options = PgConnectOptions::from_str(url)
        .map_err(|e| JobError::retryable(format!("the Postgres URL does not parse: {e}")))?
        .application_name(app);
    Ok(PgPoolOptions::new()
        .max_connections(8)
        .acquire_timeout(Duration::from_secs(3))
        .connect_lazy_with(options))
}

/// One value bound to a side-effect statement.
pub enum Arg<'a> {
    Uuid(uuid::Uuid),
    Text(Option<&'a str>),
    Int(i32),
    BigInt(i64),
    Bool(bool),
}

/// The database the side effects go to: the queue's own.
#[derive(Clone)]
pub enum SideDb {
    Postgres(PgPool),
    Sqlite(SqlitePool),
}

/// Binds `args` in order on a query of either database.
macro_rules! bind_all {
    ($query:expr, $args:expr) => {{
        let mut query = $query;
        for arg in $args {
            query = match arg {
                Arg::Uuid(v) => query.bind(*v),
                Arg::Text(v) => query.bind(*v),
                Arg::Int(v) => query.bind(*v),
                Arg::BigInt(v) => query.bind(*v),
                Arg::Bool(v) => query.bind(*v),
            };
        }
        query
    }};
}

impl SideDb {
    /// Runs one statement.
    pub async fn execute(&self, sql: String, args: &[Arg<'_>]) -> Result<(), JobError> {
        match self {
            SideDb::Postgres(pool) => {
                bind_all!(sqlx::query(AssertSqlSafe(sql)), args)
                    .execute(pool)
                    .await?;
            }
            SideDb::Sqlite(pool) => {
                bind_all!(sqlx::query(AssertSqlSafe(sql)), args)
                    .execute(pool)
                    .await?;
            }
        }
        Ok(())
    }

    /// Runs one query answering one boolean.
    pub async fn fetch_bool(&self, sql: String, args: &[Arg<'_>]) -> Result<bool, JobError> {
        Ok(match self {
            SideDb::Postgres(pool) => {
                bind_all!(sqlx::query_scalar(AssertSqlSafe(sql)), args)
                    .fetch_one(pool)
                    .await?
            }
            SideDb::Sqlite(pool) => {
                bind_all!(sqlx::query_scalar(AssertSqlSafe(sql)), args)
                    .fetch_one(pool)
                    .await?
            }
        })
    }
}

/// Opens the SQLite queue at `url` (migrated by the test), and runs `session` (statements for
/// the connection that writes, such as temporary triggers: they live as long as it does, and
/// the driver keeps its one writing connection for its whole life).
pub async fn open_sqlite(url: &str, session: Option<String>) -> Result<(Jobs, SideDb), JobError> {
    let driver = SqliteDriver::connect(url).await?;
    let pool = driver.pool().clone();
    if let Some(session) = session {
        let mut writer = driver.writer().await?;
        sqlx::raw_sql(AssertSqlSafe(session))
            .execute(&mut *writer)
            .await?;
    }
    Ok((Jobs::new(driver), SideDb::Sqlite(pool)))
}
