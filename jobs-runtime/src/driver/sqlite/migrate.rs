//! The SQLite driver's embedded migrations (`migrations/sqlite/NNNN_*.sql` at the workspace
//! root, beside the Postgres ones), applied in order, once each, in one `BEGIN IMMEDIATE`
//! transaction: the write lock it takes makes concurrent starters (threads or processes on one
//! file) take turns, and a migration that fails leaves nothing behind.

use sqlx::Connection;

use super::classify::{classify, Op};
use super::writer::Writer;
use crate::error::JobError;

/// One embedded SQLite migration.
#[derive(Debug, Clone, Copy)]
pub struct SqliteMigration {
    /// Its number.
    pub version: i32,
    /// Its file name.
    pub name: &'static str,
    sql: &'static str,
}

/// Every SQLite migration this build knows, oldest first.
pub const SQLITE_MIGRATIONS: &[SqliteMigration] = &[
    SqliteMigration {
        version: 1,
        name: "0001_jobs.sql",
        sql: include_str!("../../../migrations/sqlite/0001_jobs.sql"),
    },
    SqliteMigration {
        version: 2,
        name: "0002_job_actor.sql",
        sql: include_str!("../../../migrations/sqlite/0002_job_actor.sql"),
    },
    SqliteMigration {
        version: 3,
        name: "0003_webhook_ledger.sql",
        sql: include_str!("../../../migrations/sqlite/0003_webhook_ledger.sql"),
    },
    SqliteMigration {
        version: 4,
        name: "0004_job_history.sql",
        sql: include_str!("../../../migrations/sqlite/0004_job_history.sql"),
    },
    SqliteMigration {
        version: 5,
        name: "0005_run_index_shared_only.sql",
        sql: include_str!("../../../migrations/sqlite/0005_run_index_shared_only.sql"),
    },
    SqliteMigration {
        version: 6,
        name: "0006_created_index_ascending.sql",
        sql: include_str!("../../../migrations/sqlite/0006_created_index_ascending.sql"),
    },
    SqliteMigration {
        version: 7,
        name: "0007_outbox.sql",
        sql: include_str!("../../../migrations/sqlite/0007_outbox.sql"),
    },
    SqliteMigration {
        version: 8,
        name: "0008_priority.sql",
        sql: include_str!("../../../migrations/sqlite/0008_priority.sql"),
    },
    SqliteMigration {
        version: 9,
        name: "0009_due_hints.sql",
        sql: include_str!("../../../migrations/sqlite/0009_due_hints.sql"),
    },
    SqliteMigration {
        version: 10,
        name: "0010_unique_until.sql",
        sql: include_str!("../../../migrations/sqlite/0010_unique_until.sql"),
    },
    SqliteMigration {
        version: 11,
        name: "0011_worker_settings.sql",
        sql: include_str!("../../../migrations/sqlite/0011_worker_settings.sql"),
    },
    SqliteMigration {
        version: 12,
        name: "0012_dependencies.sql",
        sql: include_str!("../../../migrations/sqlite/0012_dependencies.sql"),
    },
    SqliteMigration {
        version: 13,
        name: "0013_job_result.sql",
        sql: include_str!("../../../migrations/sqlite/0013_job_result.sql"),
    },
    SqliteMigration {
        version: 14,
        name: "0014_groups.sql",
        sql: include_str!("../../../migrations/sqlite/0014_groups.sql"),
    },
    SqliteMigration {
        version: 15,
        name: "0015_outbox_lease.sql",
        sql: include_str!("../../../migrations/sqlite/0015_outbox_lease.sql"),
    },
];

/// Applies every migration not yet applied. Idempotent; safe from several processes at once.
/// Answers the versions it applied.
pub(crate) async fn migrate(writer: &Writer) -> Result<Vec<i32>, JobError> {
    let failed = |e| classify(Op::Migrate, e);
    let mut conn = writer.acquire(Op::Migrate).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    sqlx::raw_sql(
        "create table if not exists x_jobs_migrations (
             version    integer primary key,
             name       text    not null,
             applied_at text    not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
         )",
    )
    .execute(&mut *tx)
    .await
    .map_err(failed)?;
    let applied: Vec<i32> = sqlx::query_scalar("select version from x_jobs_migrations")
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?;
    let mut ran = Vec::new();
    for migration in SQLITE_MIGRATIONS {
        if applied.contains(&migration.version) {
            continue;
        }
        sqlx::raw_sql(migration.sql)
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        sqlx::query("insert into x_jobs_migrations (version, name) values (?, ?)")
            .bind(migration.version)
            .bind(migration.name)
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
        ran.push(migration.version);
    }
    // The outbox's `priority` and `unique_for_ms` columns, which `SqliteOutbox::install` may
    // have added first to a file it shares (SQLite cannot add a column only if missing, so no
    // file adds them), and the per-row holder columns 0015 retired.
    super::outbox::ensure_columns(&mut tx)
        .await
        .map_err(failed)?;
    tx.commit().await.map_err(failed)?;
    Ok(ran)
}

/// The embedded migrations the file lacks (all of them before the first `migrate`), and its
/// `journal_mode` and `synchronous`. Reads only.
pub(crate) async fn store_check(
    reader: &sqlx::SqlitePool,
) -> Result<crate::driver::StoreCheck, JobError> {
    let failed = |e| classify(Op::Migrate, e);
    let table: Option<String> = sqlx::query_scalar(
        "select name from sqlite_master where type = 'table' and name = 'x_jobs_migrations'",
    )
    .fetch_optional(reader)
    .await
    .map_err(failed)?;
    let applied: Vec<i32> = match table {
        Some(_) => sqlx::query_scalar("select version from x_jobs_migrations")
            .fetch_all(reader)
            .await
            .map_err(failed)?,
        None => Vec::new(),
    };
    let pending = SQLITE_MIGRATIONS
        .iter()
        .map(|m| m.version)
        .filter(|v| !applied.contains(v))
        .collect();
    let journal: String = sqlx::query_scalar("pragma journal_mode")
        .fetch_one(reader)
        .await
        .map_err(failed)?;
    let synchronous: i64 = sqlx::query_scalar("pragma synchronous")
        .fetch_one(reader)
        .await
        .map_err(failed)?;
    let level = match synchronous {
        0 => "off",
        1 => "normal",
        2 => "full",
        _ => "extra",
    };
    let weakness = (synchronous == 0).then(|| {
        "synchronous = off: a crash of the machine can lose acknowledged jobs".to_string()
    });
    Ok(crate::driver::StoreCheck {
        pending_migrations: pending,
        settings: vec![
            ("journal_mode".into(), journal),
            ("synchronous".into(), level.into()),
        ],
        weakness,
    })
}
