//! A Redis process test's queue and what it keeps beside it: a `redis-server` of the test's own
//! (AOF with `appendfsync always`, so nothing it acknowledged is lost when it is SIGKILLed; the
//! URL requires it, so every process checks it at connect), a key prefix of its own, and a
//! Postgres schema of its own on the test server for what Redis has no tables for: the side
//! effects the jobs record and, in a chaos run, the audit the worker processes write
//! (`audit_redis.sql`, [`RedisStore::install_audit`]). The crash test (`support/crash.rs`) runs
//! on it too, with a side-effect table of its own.

use std::time::Duration;

use jobs::driver::{JobDriver, QueueStatsParams, RedisDriver};
use jobs::sqlx::{self, AssertSqlSafe, PgPool};
use jobs::{JobState, Jobs};

use crate::chaos::fleet::Fleet;
use crate::support::pg;
use crate::support::redis::{self, Persistence, RedisServer};

/// The audit's tables, in schema `{s}`.
const AUDIT: &str = include_str!("../audit_redis.sql");

/// The queue, its server, and the side schema.
pub struct RedisStore {
    /// Public so a scenario can SIGKILL and restart it, and run `redis-cli` on it.
    pub server: RedisServer,
    url: String,
    pool: PgPool,
    schema: String,
    driver: RedisDriver,
}

/// The queue's jobs by state, summed over its queues.
#[derive(Debug, Default, Clone, Copy)]
pub struct Totals {
    pub all: u64,
    pub live: u64,
    pub done: u64,
}

impl RedisStore {
    /// A fresh server, prefix and side schema for `test`. Starts the server on this thread:
    /// it dies with the thread that started it, and the test's own thread lives as long as
    /// the test.
    pub async fn start(test: &str) -> RedisStore {
        let server = RedisServer::start(test, Persistence::AofAlways);
        let url = format!(
            "{}/?prefix={}&require_durability=always",
            server.url(),
            redis::prefix(test)
        );
        let (pool, schema) = pg::schema(test).await;
        let driver = RedisDriver::connect(&url)
            .await
            .expect("the test's Redis server answers");
        RedisStore {
            server,
            url,
            pool,
            schema,
            driver,
        }
    }

    /// Creates the chaos audit's tables (and the side effects') in the side schema.
    pub async fn install_audit(&self) {
        self.exec(&AUDIT.replace("{s}", &self.schema)).await;
    }

    /// The queue's URL (prefix and required durability included): the workers' `DATABASE_URL`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The side schema.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The test's own driver on the queue.
    pub fn driver(&self) -> &RedisDriver {
        &self.driver
    }

    /// A client on the queue.
    pub fn jobs(&self) -> Jobs {
        Jobs::new(self.driver.clone())
    }

    /// Worker processes on the queue, their side effects and audit in the side schema.
    pub fn fleet(&self, env: &[(&'static str, &str)]) -> Fleet {
        let mut env = env.to_vec();
        env.push(("SIDE_DATABASE_URL", pg::database_url()));
        Fleet::on(self.url.clone(), &self.schema, &env)
    }

    /// The jobs by state, or `None` while the server cannot answer (restarting, or this
    /// test's own connection just cut).
    pub async fn totals(&self) -> Option<Totals> {
        let now = chrono::Utc::now();
        let stats = self
            .driver
            .queue_stats(&QueueStatsParams { now })
            .await
            .ok()?;
        let mut t = Totals::default();
        for q in stats {
            let live = q.ready + q.delayed + q.running + q.suspended;
            t.live += live;
            t.done += q.done;
            t.all += live + q.done + q.failed + q.dead + q.cancelled;
        }
        Some(t)
    }

    /// Reads job `id`, trying again for a few seconds while the server cannot answer.
    pub async fn job(&self, id: uuid::Uuid) -> Option<jobs::JobRecord> {
        let params = jobs::driver::JobGetParams { id };
        for _ in 0..100 {
            if let Ok(row) = self.driver.job_get(&params).await {
                return row;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("job {id} could not be read for 5 s");
    }

    /// Runs `sql` on the side schema; panics on failure.
    pub async fn exec(&self, sql: &str) {
        sqlx::raw_sql(AssertSqlSafe(sql.to_string()))
            .execute(&self.pool)
            .await
            .unwrap_or_else(|e| panic!("{e}\n{sql}"));
    }

    /// The one integer `sql` answers on the side schema; panics on failure.
    pub async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(AssertSqlSafe(sql.to_string()))
            .fetch_one(&self.pool)
            .await
            .unwrap_or_else(|e| panic!("{e}\n{sql}"))
    }

    /// The side pool, for reads of several columns.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

/// Whether `state` is final.
pub fn is_final(state: JobState) -> bool {
    matches!(
        state,
        JobState::Done | JobState::Failed | JobState::Dead | JobState::Cancelled
    )
}
