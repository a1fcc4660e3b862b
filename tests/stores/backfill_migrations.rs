//! `BackfillStore::backfill_migration_applied` on every store: what the gate of a backfill
//! declaring `requires` reads. Postgres and SQLite read sqlx's `_sqlx_migrations` (on the
//! search path; absent: nothing applied; a failed row: not applied), Redis a set under the
//! driver's prefix, memory what `MemoryDriver::record_migration` recorded.

use jobs::driver::backfill_store::APPLIED_MIGRATIONS_KEY;
use jobs::driver::{JobDriver, MemoryDriver, PostgresDriver, RedisDriver, SqliteDriver};
use jobs::sqlx::{self, AssertSqlSafe};

use crate::support;

const APPLIED: i64 = 20261201093000;
const FAILED: i64 = 20261202000000;
const NEVER: i64 = 20261203000000;

async fn applied(d: &dyn JobDriver, version: i64) -> bool {
    d.backfill_store()
        .expect("every driver keeps a ledger of passes")
        .backfill_migration_applied(version)
        .await
        .unwrap()
}

/// sqlx's table, as `sqlx migrate run` creates it.
const SQLX_TABLE: &str = "create table _sqlx_migrations (version bigint primary key, \
     description text not null, installed_on timestamp not null default current_timestamp, \
     success boolean not null, checksum blob not null, execution_time bigint not null)";

#[tokio::test]
async fn memory() {
    let d = MemoryDriver::new();
    assert!(!applied(&d, APPLIED).await);
    d.record_migration(APPLIED);
    assert!(applied(&d, APPLIED).await);
    assert!(!applied(&d, NEVER).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    let dir = support::sqlite::TempDir::new("backfill_migrations");
    let d: SqliteDriver = support::sqlite::driver_in(&dir).await;
    assert!(
        !applied(&d, APPLIED).await,
        "no sqlx table: nothing applied"
    );
    let app = sqlx::SqlitePool::connect(&dir.url()).await.unwrap();
    sqlx::query(SQLX_TABLE).execute(&app).await.unwrap();
    for (version, success) in [(APPLIED, true), (FAILED, false)] {
        sqlx::query(
            "insert into _sqlx_migrations (version, description, success, checksum, \
             execution_time) values (?1, 'app', ?2, x'00', 1)",
        )
        .bind(version)
        .bind(success)
        .execute(&app)
        .await
        .unwrap();
    }
    assert!(applied(&d, APPLIED).await);
    assert!(
        !applied(&d, FAILED).await,
        "a failed migration is not applied"
    );
    assert!(!applied(&d, NEVER).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    // The app's table lives in the test's own schema, found on the pool's search path.
    let (_, schema) = support::pg::schema("backfill_migrations").await;
    let options: sqlx::postgres::PgConnectOptions = support::pg::database_url()
        .parse::<sqlx::postgres::PgConnectOptions>()
        .unwrap()
        .options([("search_path", schema.as_str())]);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .unwrap();
    let d = PostgresDriver::new(pool.clone(), &schema).unwrap();
    assert!(
        !applied(&d, APPLIED).await,
        "no sqlx table: nothing applied"
    );
    let table = SQLX_TABLE.replace("blob", "bytea");
    sqlx::query(AssertSqlSafe(table))
        .execute(&pool)
        .await
        .unwrap();
    for (version, success) in [(APPLIED, true), (FAILED, false)] {
        sqlx::query(
            "insert into _sqlx_migrations (version, description, success, checksum, \
             execution_time) values ($1, 'app', $2, '\\x00', 1)",
        )
        .bind(version)
        .bind(success)
        .execute(&pool)
        .await
        .unwrap();
    }
    assert!(applied(&d, APPLIED).await);
    assert!(
        !applied(&d, FAILED).await,
        "a failed migration is not applied"
    );
    assert!(!applied(&d, NEVER).await);
}

/// On Redis, the set under the driver's prefix; `sadd` runs `redis-cli` against the server.
async fn on_redis(url: &str, sadd: impl Fn(&[&str]) -> String) {
    let prefix = support::redis::prefix("backfill_migrations");
    let d = RedisDriver::connect(&format!("{url}/?prefix={prefix}"))
        .await
        .unwrap();
    assert!(!applied(&d, APPLIED).await);
    let key = format!("{{{prefix}:{APPLIED_MIGRATIONS_KEY}}}");
    sadd(&["SADD", &key, &APPLIED.to_string()]);
    assert!(applied(&d, APPLIED).await);
    assert!(!applied(&d, NEVER).await);
}

#[tokio::test]
async fn redis() {
    let server = support::redis::shared_server();
    on_redis(&server.url(), |args| server.cli(args)).await;
}

#[tokio::test]
async fn redis_cluster() {
    let cluster = support::redis::shared_cluster();
    on_redis(&cluster.url(), |args| cluster.cli(args)).await;
}
