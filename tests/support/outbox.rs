//! The outbox fixtures of the SQL stores, for `jobs::outbox_suite!`: each case stages on a
//! transaction of its own database (a fresh Postgres schema, a fresh SQLite file).

use std::sync::Arc;

use async_trait::async_trait;
use jobs::conformance::outbox::OutboxFixture;
use jobs::driver::outbox::OutboxStore;
use jobs::driver::postgres::PostgresOutbox;
use jobs::driver::sqlite::SqliteOutbox;
use jobs::driver::CallerConnection;
use jobs::driver::EnqueueRequest;
use jobs::sqlx::postgres::PgPool;
use jobs::sqlx::sqlite::{SqlitePool, SqlitePoolOptions};
use jobs::JobError;

use super::sqlite::TempDir;

/// The Postgres outbox in a fresh schema (installed over the jobs' migrations: idempotent).
pub struct PostgresOutboxFixture {
    pub pool: PgPool,
    pub outbox: PostgresOutbox,
}

pub async fn postgres(test: &str) -> Arc<dyn OutboxFixture> {
    let (fixture, _schema) = postgres_in_schema(test).await;
    Arc::new(fixture)
}

/// [`postgres`]'s fixture, and the name of its schema (for a case that reads the tables).
pub async fn postgres_in_schema(test: &str) -> (PostgresOutboxFixture, String) {
    let (pool, schema) = super::pg::schema(test).await;
    let outbox = PostgresOutbox::new(pool.clone(), &schema).expect("a test schema");
    outbox.install().await.expect("install over the migrations");
    (PostgresOutboxFixture { pool, outbox }, schema)
}

#[async_trait]
impl OutboxFixture for PostgresOutboxFixture {
    fn store(&self) -> Arc<dyn OutboxStore> {
        Arc::new(self.outbox.clone())
    }

    async fn stage(&self, requests: &[EnqueueRequest], commit: bool) -> Result<(), JobError> {
        stage_on(&self.pool, &self.outbox, requests, commit).await
    }
}

/// The SQLite outbox in a fresh file of its own (an app database apart from any job store).
pub struct SqliteOutboxFixture {
    pub pool: SqlitePool,
    pub outbox: SqliteOutbox,
    _dir: TempDir,
}

pub async fn sqlite(test: &str) -> Arc<dyn OutboxFixture> {
    let dir = TempDir::new(test);
    let pool = sqlite_pool(&dir).await;
    let outbox = SqliteOutbox::new(pool.clone());
    outbox.install().await.expect("install");
    Arc::new(SqliteOutboxFixture {
        pool,
        outbox,
        _dir: dir,
    })
}

/// A pool on `app.db` in `dir`, in WAL mode with a busy timeout, as an app would open it.
pub async fn sqlite_pool(dir: &TempDir) -> SqlitePool {
    let options = format!("sqlite://{}", dir.path().join("app.db").display())
        .parse::<jobs::sqlx::sqlite::SqliteConnectOptions>()
        .expect("a file URL")
        .create_if_missing(true)
        .journal_mode(jobs::sqlx::sqlite::SqliteJournalMode::Wal)
        .busy_timeout(std::time::Duration::from_secs(10));
    SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(options)
        .await
        .expect("the app file opens")
}

#[async_trait]
impl OutboxFixture for SqliteOutboxFixture {
    fn store(&self) -> Arc<dyn OutboxStore> {
        Arc::new(self.outbox.clone())
    }

    async fn stage(&self, requests: &[EnqueueRequest], commit: bool) -> Result<(), JobError> {
        stage_on(&self.pool, &self.outbox, requests, commit).await
    }
}

/// Stages `requests` through `outbox` in one transaction on `pool`, then commits or rolls back.
async fn stage_on<DB>(
    pool: &jobs::sqlx::Pool<DB>,
    outbox: &dyn OutboxStore,
    requests: &[EnqueueRequest],
    commit: bool,
) -> Result<(), JobError>
where
    DB: jobs::sqlx::Database,
    for<'c> jobs::sqlx::Transaction<'c, DB>: CallerConnection,
{
    let mut tx = pool.begin().await.expect("begin");
    for request in requests {
        outbox.outbox_stage(tx.connection(), request).await?;
    }
    if commit {
        tx.commit().await.expect("commit");
    } else {
        tx.rollback().await.expect("rollback");
    }
    Ok(())
}
