//! The outbox a verb reads (`jobs outbox`, `jobs dashboard`): the app's Postgres or SQLite
//! database at `--outbox-url` (`x_outbox` in `--outbox-schema`), or else the job store's own
//! database at `--database-url`, beside the jobs (in `--schema`). Apart from `connect.rs`,
//! which opens the job store: the outbox needs no job store, and opens no other kind.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};

use crate::driver::outbox::{OutboxStats, OutboxStore};
use crate::driver::postgres::PostgresOutbox;
use crate::driver::sqlite::{SqliteOutbox, DEFAULT_BUSY_TIMEOUT};
use crate::driver::PostgresDriver;
use crate::error::{ErrorCode, JobError};

use super::args::Cli;

/// An outbox the flags named, opened.
pub(super) struct FlaggedOutbox {
    /// The store.
    pub(super) store: Arc<dyn OutboxStore>,
    /// The Postgres schema `x_outbox` is read in; `None` on SQLite.
    pub(super) schema: Option<String>,
    /// `true` when it is the job store's own database (no `--outbox-url`).
    pub(super) beside_jobs: bool,
}

/// The kinds of database an outbox lives in.
#[derive(Clone, Copy)]
enum Kind {
    Postgres,
    Sqlite,
}

/// The kind `url`'s scheme names, if it names one an outbox lives in.
fn kind_of(url: &str) -> Option<Kind> {
    let scheme = url.split_once(':')?.0.to_ascii_lowercase();
    match scheme.as_str() {
        "postgres" | "postgresql" => Some(Kind::Postgres),
        "sqlite" => Some(Kind::Sqlite),
        _ => None,
    }
}

/// Opens the outbox the flags name: `--outbox-url` when given (Postgres or SQLite only),
/// else the job store's database when it is Postgres or SQLite. Refusals are
/// `X_CLI_BAD_FLAG`, and never repeat a URL (it may hold a password).
pub(super) async fn open(cli: &Cli) -> Result<FlaggedOutbox, JobError> {
    // An empty value means none, whatever the environment holds (as `--database-url ""`).
    if let Some(url) = cli.outbox_url.as_deref().filter(|u| !u.is_empty()) {
        let kind = kind_of(url).ok_or_else(|| {
            JobError::new(
                ErrorCode::CliBadFlag,
                "--outbox-url is neither a postgres:// nor a sqlite:// URL: the outbox lives in \
                 the app's own Postgres or SQLite database",
            )
            .with_fix(
                "pass --outbox-url (or JOBS_OUTBOX_URL) postgres://... or sqlite://path/to/app.db, \
                 naming the database the app stages its jobs in",
            )
        })?;
        let schema = cli.outbox_schema.as_deref().unwrap_or("public");
        return opened(kind, url, "--outbox-url", schema, false).await;
    }
    let url = cli
        .database_url
        .as_deref()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            JobError::new(
                ErrorCode::CliBadFlag,
                "no database: neither JOBS_OUTBOX_URL nor DATABASE_URL is set",
            )
            .with_fix(
                "pass --outbox-url naming the app's database (postgres://... or sqlite://...), \
                 or --database-url when the app stages its jobs in the job store's own database",
            )
        })?;
    let kind = kind_of(url).ok_or_else(|| {
        JobError::new(
            ErrorCode::CliBadFlag,
            "the job store at --database-url keeps no outbox: only a Postgres or SQLite database \
             holds x_outbox",
        )
        .with_fix(
            "pass --outbox-url (or JOBS_OUTBOX_URL) naming the app's database the jobs are staged \
             in (postgres://... or sqlite://...)",
        )
    })?;
    let schema = cli.schema.as_deref().unwrap_or("public");
    opened(kind, url, "--database-url", schema, true).await
}

async fn opened(
    kind: Kind,
    url: &str,
    flag: &str,
    schema: &str,
    beside_jobs: bool,
) -> Result<FlaggedOutbox, JobError> {
    let (store, schema): (Arc<dyn OutboxStore>, _) = match kind {
        Kind::Postgres => {
            // The driver's own connect: its probe names what is wrong (URL, login, server).
            let driver = PostgresDriver::connect(url).await?;
            let store = PostgresOutbox::new(driver.pool().clone(), schema)?;
            (Arc::new(store), Some(schema.to_string()))
        }
        Kind::Sqlite => (Arc::new(sqlite(url, flag)?), None),
    };
    Ok(FlaggedOutbox {
        store,
        schema,
        beside_jobs,
    })
}

/// A SQLite outbox on `url`'s file as it is: never created (a mistyped path would otherwise
/// become an empty database), its journal mode left as the app set it.
fn sqlite(url: &str, flag: &str) -> Result<SqliteOutbox, JobError> {
    let options = SqliteConnectOptions::from_str(url).map_err(|_| {
        JobError::new(
            ErrorCode::CliBadFlag,
            format!("{flag} does not read as a SQLite URL"),
        )
        .with_fix(format!("write {flag} as sqlite://path/to/app.db"))
    })?;
    let file = options.get_filename();
    if file != Path::new(":memory:") && !file.exists() {
        return Err(JobError::new(
            ErrorCode::CliBadFlag,
            format!(
                "{flag} names a SQLite file that does not exist: {}",
                file.display()
            ),
        )
        .with_fix(format!("check the path {flag} names")));
    }
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_lazy_with(options.busy_timeout(DEFAULT_BUSY_TIMEOUT));
    Ok(SqliteOutbox::new(pool))
}

impl FlaggedOutbox {
    /// The outbox's figures; a database without `x_outbox` is told how to get one.
    pub(super) async fn stats(&self) -> Result<OutboxStats, JobError> {
        self.store
            .outbox_stats()
            .await
            .map_err(|error| self.explained(error))
    }

    /// `X_DRIVER_SCHEMA_MISSING` with the table and the fix for where it was looked for; any
    /// other error as it is.
    fn explained(&self, error: JobError) -> JobError {
        if !error.is(ErrorCode::DriverSchemaMissing) {
            return error;
        }
        let table = match &self.schema {
            Some(schema) => format!("`{schema}.x_outbox`"),
            None => "`x_outbox`".to_string(),
        };
        if self.beside_jobs {
            return JobError::new(
                ErrorCode::DriverSchemaMissing,
                format!("the job store's database has no outbox table {table}"),
            )
            .with_fix(
                "run `jobs migrate` with the same --database-url (and --schema): the jobs' \
                 migrations create x_outbox beside the jobs; or, when the app stages its jobs in \
                 a database of its own, pass --outbox-url naming it",
            );
        }
        let install = if self.schema.is_some() {
            "PostgresOutbox::install()"
        } else {
            "SqliteOutbox::install()"
        };
        JobError::new(
            ErrorCode::DriverSchemaMissing,
            format!("the database at --outbox-url has no outbox table {table}"),
        )
        .with_fix(format!(
            "install the outbox there: `{install}` from the app, or the jobs' migrations \
             (`jobs migrate --database-url` naming it); or pass --outbox-schema naming the \
             schema x_outbox lives in"
        ))
    }
}
