//! The embedded migrations (`migrations/NNNN_*.sql` at the workspace root), applied in order,
//! once each, under an advisory lock so concurrent starters take turns.
//!
//! They are read through `jobs-runtime/migrations`, a symbolic link to the workspace's folder,
//! so they lie inside the `jobs-runtime` package: `cargo package` stores the files themselves and the
//! published crate builds on its own (`.ci/run` packages every published crate to prove it).

use sqlx::PgPool;

use super::classify::{classify, Op};
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

/// Embeds `migrations/<file>` under its version.
macro_rules! migrations {
    ($($version:literal => $file:literal,)*) => {
        &[$(Migration {
            version: $version,
            name: $file,
            sql: include_str!(concat!("../../../migrations/", $file)),
        },)*]
    };
}

/// Every migration this build knows, oldest first.
pub const MIGRATIONS: &[Migration] = migrations! {
    1 => "0001_jobs.sql",
    2 => "0002_scheduler.sql",
    3 => "0003_fair_claim.sql",
    4 => "0004_traceparent.sql",
    5 => "0005_backfill_ledger.sql",
    6 => "0006_operator.sql",
    7 => "0007_retention.sql",
    8 => "0008_drop_unused_claim_index.sql",
    9 => "0009_text_keys_collate_c.sql",
    10 => "0010_wake_throttle_index.sql",
    11 => "0011_drop_ready_created_index.sql",
    12 => "0012_claim_sets_started_at.sql",
    13 => "0013_counters_in_settle_statements.sql",
    14 => "0014_scheduler_leader_since.sql",
    15 => "0015_job_actor.sql",
    16 => "0016_events_expiry_index.sql",
    17 => "0017_webhook_ledger.sql",
    18 => "0018_depth_index_only.sql",
    19 => "0019_job_history.sql",
    20 => "0020_run_index_shared_only.sql",
    21 => "0021_failed_index_without_done.sql",
    22 => "0022_created_index_ascending.sql",
    23 => "0023_outbox.sql",
    24 => "0024_priority.sql",
    25 => "0025_outbox_priority.sql",
    26 => "0026_unique_until.sql",
    27 => "0027_outbox_unique_for.sql",
    28 => "0028_worker_settings.sql",
    29 => "0029_dependencies.sql",
    30 => "0030_job_result.sql",
    31 => "0031_groups.sql",
    32 => "0032_outbox_lease.sql",
};

/// Creates the schema and applies every migration not yet applied there. Idempotent; safe to
/// run from several processes at once. Answers the versions it applied.
pub(crate) async fn migrate(pool: &PgPool, schema: &str) -> Result<Vec<i32>, JobError> {
    let mut tx = super::pooled::begin(pool)
        .await
        .map_err(|e| classify(Op::Migrate, e))?;
    sqlx::query("select pg_advisory_xact_lock(hashtext($1))")
        .bind(format!("jobs.migrate:{schema}"))
        .execute(&mut *tx)
        .await
        .map_err(|e| classify(Op::MigrateLock, e))?;
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
        .map_err(|e| classify(Op::MigrateBootstrap, e))?;
    let applied: Vec<i32> = sqlx::query_scalar(safe(render(
        "select version from {schema}.x_jobs_migrations",
        schema,
    )))
    .fetch_all(&mut *tx)
    .await
    .map_err(|e| classify(Op::MigrateRead, e))?;
    let mut done = Vec::new();
    for migration in MIGRATIONS {
        if applied.contains(&migration.version) {
            continue;
        }
        sqlx::raw_sql(safe(render(migration.sql, schema)))
            .execute(&mut *tx)
            .await
            .map_err(|e| classify(Op::MigrateApply, e))?;
        sqlx::query(safe(render(
            "insert into {schema}.x_jobs_migrations (version, name) values ($1, $2)",
            schema,
        )))
        .bind(migration.version)
        .bind(migration.name)
        .execute(&mut *tx)
        .await
        .map_err(|e| classify(Op::MigrateRecord, e))?;
        done.push(migration.version);
    }
    tx.commit()
        .await
        .map_err(|e| classify(Op::MigrateCommit, e))?;
    Ok(done)
}

/// The embedded migrations `schema` lacks (all of them when its table is missing), and the
/// server's `fsync` and `synchronous_commit`. Reads only.
pub(crate) async fn store_check(
    pool: &PgPool,
    schema: &str,
) -> Result<crate::driver::StoreCheck, JobError> {
    use crate::driver::Operation as Op;
    let applied: Vec<i32> = match sqlx::query_scalar(safe(render(
        "select version from {schema}.x_jobs_migrations",
        schema,
    )))
    .fetch_all(pool)
    .await
    {
        Ok(applied) => applied,
        Err(e) => {
            let error = super::classify::classify(Op::Migrate, e);
            if !error.is(crate::error::ErrorCode::DriverSchemaMissing) {
                return Err(error);
            }
            Vec::new()
        }
    };
    let pending = MIGRATIONS
        .iter()
        .map(|m| m.version)
        .filter(|v| !applied.contains(v))
        .collect();
    let mut settings = Vec::new();
    let mut weakness = None;
    for (name, statement) in [
        ("fsync", "show fsync"),
        ("synchronous_commit", "show synchronous_commit"),
    ] {
        let value: String = sqlx::query_scalar(statement)
            .fetch_one(pool)
            .await
            .map_err(|e| super::classify::classify(Op::Migrate, e))?;
        if value == "off" && weakness.is_none() {
            weakness = Some(format!(
                "{name} = off: a crash of the server can lose acknowledged jobs"
            ));
        }
        settings.push((name.to_string(), value));
    }
    Ok(crate::driver::StoreCheck {
        pending_migrations: pending,
        settings,
        weakness,
    })
}

#[cfg(test)]
mod tests {
    use super::MIGRATIONS;

    #[test]
    fn every_file_in_migrations_is_embedded_in_order() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .expect("the migrations folder")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|name| name.ends_with(".sql"))
            .collect();
        files.sort();
        let embedded: Vec<&str> = MIGRATIONS.iter().map(|m| m.name).collect();
        assert_eq!(embedded, files);
        // Versions are 1, 2, 3, ... with no gap and no repeat.
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i32 + 1);
        }
        for m in MIGRATIONS {
            assert!(m.name.starts_with(&format!("{:04}_", m.version)));
        }
    }

    /// The package's `migrations` is the workspace's folder itself (a link, not a copy that
    /// could drift), whenever the crate is built inside the workspace.
    #[test]
    fn the_package_migrations_are_the_workspace_folder() {
        let package = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let workspace = package.join("../migrations");
        if !package.join("../Cargo.toml").exists() {
            // Built from the published package: the files were copied in, there is no twin.
            assert!(package.join("migrations/0001_jobs.sql").is_file());
            return;
        }
        let link = std::fs::read_link(package.join("migrations"))
            .expect("jobs-runtime/migrations is a symbolic link to ../migrations");
        assert_eq!(link, std::path::Path::new("../migrations"));
        assert_eq!(
            package.join("migrations").canonicalize().unwrap(),
            workspace.canonicalize().unwrap()
        );
    }
}
