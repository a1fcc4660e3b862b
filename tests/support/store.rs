//! One test's queue, on Postgres (a schema of its own) or on SQLite (a file of its own), with
//! what the process tests need of it beside the driver: the URL their worker processes open,
//! raw statements on the test's side tables, and counts.
//!
//! Statements are written once for both: tables are qualified with [`Store::schema`] (`main` on
//! SQLite), placeholders are `$1`, and the few expressions the two dialects spell differently
//! come from here ([`Store::json_text`], [`Store::uuid_literal`]).

use std::collections::BTreeSet;

use jobs::driver::{PostgresDriver, SqliteDriver};
use jobs::sqlx::{self, AssertSqlSafe, PgPool};
use jobs::Jobs;

use super::{pg, sqlite};

/// Evaluates `$body` with `$pool` bound to the store's pool (each arm its own database type).
macro_rules! on_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match $store {
            Store::Postgres { pool: $pool, .. } => $body,
            Store::Sqlite { driver, .. } => {
                let $pool = driver.pool();
                $body
            }
        }
    };
}

/// A test's queue and the database it lives in.
pub enum Store {
    Postgres {
        pool: PgPool,
        schema: String,
        url: String,
    },
    Sqlite {
        driver: SqliteDriver,
        /// The file's directory, removed when the store drops.
        dir: sqlite::TempDir,
    },
}

impl Store {
    /// A fresh migrated schema on the test server.
    pub async fn postgres(test: &str) -> Store {
        let (pool, schema) = pg::schema(test).await;
        let url = pg::database_url().to_string();
        Store::Postgres { pool, schema, url }
    }

    /// A fresh migrated schema on the server at `url`.
    pub async fn postgres_on(url: &str, test: &str) -> Store {
        let (pool, schema) = pg::schema_on(url, test).await;
        let url = url.to_string();
        Store::Postgres { pool, schema, url }
    }

    /// A fresh migrated file in a directory of its own.
    pub async fn sqlite(test: &str) -> Store {
        let dir = sqlite::TempDir::new(test);
        let driver = sqlite::driver_in(&dir).await;
        Store::Sqlite { driver, dir }
    }

    /// What a worker process is given as `DATABASE_URL`.
    pub fn url(&self) -> String {
        match self {
            Store::Postgres { url, .. } => url.clone(),
            Store::Sqlite { dir, .. } => dir.url(),
        }
    }

    /// The name tables are qualified with: the schema, or SQLite's `main`.
    pub fn schema(&self) -> &str {
        match self {
            Store::Postgres { schema, .. } => schema,
            Store::Sqlite { .. } => "main",
        }
    }

    pub fn is_sqlite(&self) -> bool {
        matches!(self, Store::Sqlite { .. })
    }

    /// The Postgres pool; panics on SQLite (for the Postgres-only scenarios).
    pub fn pg_pool(&self) -> &PgPool {
        match self {
            Store::Postgres { pool, .. } => pool,
            Store::Sqlite { .. } => panic!("a Postgres-only step ran on SQLite"),
        }
    }

    /// A client on the store.
    pub fn jobs(&self) -> Jobs {
        match self {
            Store::Postgres { pool, schema, .. } => {
                Jobs::new(PostgresDriver::new(pool.clone(), schema).expect("schema"))
            }
            Store::Sqlite { driver, .. } => Jobs::new(driver.clone()),
        }
    }

    /// Runs `sql` (one or several statements); panics on failure.
    pub async fn exec(&self, sql: &str) {
        let raw = || sqlx::raw_sql(AssertSqlSafe(sql.to_string()));
        let done = on_pool!(self, |pool| raw().execute(pool).await.map(drop));
        done.unwrap_or_else(|e| panic!("{e}\n{sql}"));
    }

    /// The one integer `sql` answers; panics on failure.
    pub async fn count(&self, sql: &str) -> i64 {
        self.try_count(sql)
            .await
            .unwrap_or_else(|e| panic!("{e}\n{sql}"))
    }

    /// The one integer `sql` answers.
    pub async fn try_count(&self, sql: &str) -> Result<i64, sqlx::Error> {
        let sql = AssertSqlSafe(sql.to_string());
        on_pool!(self, |pool| sqlx::query_scalar(sql).fetch_one(pool).await)
    }

    /// Every job id in the queue.
    pub async fn job_ids(&self) -> BTreeSet<uuid::Uuid> {
        let sql = AssertSqlSafe(format!("select id from {}.x_jobs", self.schema()));
        let ids: Vec<uuid::Uuid> =
            on_pool!(self, |pool| sqlx::query_scalar(sql).fetch_all(pool).await)
                .expect("read the job ids");
        ids.into_iter().collect()
    }

    /// Whether a connection holds the SQLite file's write lock (another process's open write
    /// transaction): `BEGIN IMMEDIATE` without a busy timeout answers `SQLITE_BUSY` at once.
    /// The probe closes before answering, so it holds nothing when the caller acts. Always
    /// `false` on Postgres, which has no database-wide write lock.
    pub async fn write_locked(&self) -> bool {
        match self {
            Store::Postgres { .. } => false,
            Store::Sqlite { dir, .. } => sqlite::write_locked(&dir.url()).await,
        }
    }

    /// The text of the JSON string stored in `column` (a step's output).
    pub fn json_text(&self, column: &str) -> String {
        match self {
            Store::Postgres { .. } => format!("({column} #>> '{{}}')"),
            Store::Sqlite { .. } => format!("({column} ->> '$')"),
        }
    }

    /// A timestamp column in microseconds since the epoch (SQLite's by its Julian day, to
    /// within about 50 µs).
    pub fn epoch_us(&self, column: &str) -> String {
        match self {
            Store::Postgres { .. } => {
                format!("cast(extract(epoch from {column}) * 1000000 as bigint)")
            }
            Store::Sqlite { .. } => {
                format!("cast((julianday({column}) - 2440587.5) * 86400000000.0 as integer)")
            }
        }
    }

    /// `id` as a literal comparable with an id column (a uuid, or SQLite's 16-byte blob).
    pub fn uuid_literal(&self, id: uuid::Uuid) -> String {
        match self {
            Store::Postgres { .. } => format!("'{id}'"),
            Store::Sqlite { .. } => format!("x'{}'", id.simple()),
        }
    }
}
