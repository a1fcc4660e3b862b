//! The audit every chaos run checks against: the side-effect table the worker processes write,
//! and the log of every claim and settle with the process that made it (Postgres: a trigger
//! reading `application_name`; SQLite: temporary triggers of each process's writing
//! connection, `SQLITE_SESSION`).

use std::str::FromStr;
use std::sync::Arc;

use jobs::driver::{JobDriver, PostgresDriver, SqliteDriver};
use jobs::sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use jobs::sqlx::{self, AssertSqlSafe};

use crate::support::store::Store;

/// The Postgres tables and trigger, in schema `{s}`.
const POSTGRES: &str = include_str!("audit_postgres.sql");
/// The SQLite tables.
const SQLITE: &str = include_str!("audit_sqlite.sql");
/// The SQLite triggers of one connection, for the process named `{app}`; the chaos worker
/// includes the same file.
pub const SQLITE_SESSION: &str = include_str!("audit_sqlite_session.sql");

/// Creates the audit's tables (and on Postgres its trigger).
pub async fn install(store: &Store) {
    match store {
        Store::Postgres { schema, .. } => store.exec(&POSTGRES.replace("{s}", schema)).await,
        Store::Sqlite { .. } => store.exec(SQLITE).await,
    }
}

/// A driver of its own on `store`, whose claims and settles the audit logs under `app`.
pub async fn driver_as(store: &Store, app: &str) -> Arc<dyn JobDriver> {
    match store {
        Store::Postgres { url, schema, .. } => {
            let options = PgConnectOptions::from_str(url)
                .expect("url")
                .application_name(app);
            let pool = PgPoolOptions::new()
                .max_connections(1)
                .connect_lazy_with(options);
            Arc::new(PostgresDriver::new(pool, schema).expect("schema"))
        }
        Store::Sqlite { .. } => {
            let driver = SqliteDriver::connect(&store.url()).await.expect("open");
            sqlx::raw_sql(AssertSqlSafe(SQLITE_SESSION.replace("{app}", app)))
                .execute(&mut *driver.writer().await.expect("the writer"))
                .await
                .expect("the audit triggers");
            Arc::new(driver)
        }
    }
}
