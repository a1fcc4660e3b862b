//! The embedded migrations (`migrations/NNNN_*.sql` at the workspace root), applied in order,
//! once each, under an advisory lock so concurrent starters take turns.

use sqlx::PgPool;

use super::classify::classify;
use super::sql::{render, safe};
use crate::error::JobError;

/// One embedded migration.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// Its number.
    pub version: i32,
    /// Its file name.
    pub name: &'static str,
    sql: &'static str,
}

/// Every migration this build knows, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_jobs.sql",
        sql: include_str!("../../../../migrations/0001_jobs.sql"),
    },
    Migration {
        version: 2,
        name: "0002_scheduler.sql",
        sql: include_str!("../../../../migrations/0002_scheduler.sql"),
    },
    Migration {
        version: 3,
        name: "0003_fair_claim.sql",
        sql: include_str!("../../../../migrations/0003_fair_claim.sql"),
    },
    Migration {
        version: 4,
        name: "0004_traceparent.sql",
        sql: include_str!("../../../../migrations/0004_traceparent.sql"),
    },
    Migration {
        version: 5,
        name: "0005_backfill_ledger.sql",
        sql: include_str!("../../../../migrations/0005_backfill_ledger.sql"),
    },
    Migration {
        version: 6,
        name: "0006_operator.sql",
        sql: include_str!("../../../../migrations/0006_operator.sql"),
    },
    Migration {
        version: 7,
        name: "0007_retention.sql",
        sql: include_str!("../../../../migrations/0007_retention.sql"),
    },
    Migration {
        version: 8,
        name: "0008_drop_unused_claim_index.sql",
        sql: include_str!("../../../../migrations/0008_drop_unused_claim_index.sql"),
    },
    Migration {
        version: 9,
        name: "0009_text_keys_collate_c.sql",
        sql: include_str!("../../../../migrations/0009_text_keys_collate_c.sql"),
    },
    Migration {
        version: 10,
        name: "0010_wake_throttle_index.sql",
        sql: include_str!("../../../../migrations/0010_wake_throttle_index.sql"),
    },
];

/// Creates the schema and applies every migration not yet applied there. Idempotent; safe to
/// run from several processes at once. Answers the versions it applied.
pub(crate) async fn migrate(pool: &PgPool, schema: &str) -> Result<Vec<i32>, JobError> {
    let mut tx = pool.begin().await.map_err(|e| classify("migrate", e))?;
    sqlx::query("select pg_advisory_xact_lock(hashtext($1))")
        .bind(format!("jobs.migrate:{schema}"))
        .execute(&mut *tx)
        .await
        .map_err(|e| classify("migrate lock", e))?;
    let bootstrap = render(
        "create schema if not exists {schema};
         create table if not exists {schema}.x_jobs_migrations (
             version    integer     primary key,
             name       text        not null,
             applied_at timestamptz not null default now()
         );",
        schema,
    );
    sqlx::raw_sql(safe(bootstrap))
        .execute(&mut *tx)
        .await
        .map_err(|e| classify("migrate bootstrap", e))?;
    let applied: Vec<i32> = sqlx::query_scalar(safe(render(
        "select version from {schema}.x_jobs_migrations",
        schema,
    )))
    .fetch_all(&mut *tx)
    .await
    .map_err(|e| classify("migrate read", e))?;
    let mut done = Vec::new();
    for migration in MIGRATIONS {
        if applied.contains(&migration.version) {
            continue;
        }
        sqlx::raw_sql(safe(render(migration.sql, schema)))
            .execute(&mut *tx)
            .await
            .map_err(|e| classify("migrate apply", e))?;
        sqlx::query(safe(render(
            "insert into {schema}.x_jobs_migrations (version, name) values ($1, $2)",
            schema,
        )))
        .bind(migration.version)
        .bind(migration.name)
        .execute(&mut *tx)
        .await
        .map_err(|e| classify("migrate record", e))?;
        done.push(migration.version);
    }
    tx.commit()
        .await
        .map_err(|e| classify("migrate commit", e))?;
    Ok(done)
}
