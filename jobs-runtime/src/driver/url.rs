//! A driver from a URL: the scheme picks the store, so an app switches stores by
//! configuration (`JOBS_URL=sqlite://jobs.db` on a laptop, `postgres://...` in the fleet).
//!
//! | URL | driver |
//! |---|---|
//! | `memory:` | [`MemoryDriver`](super::MemoryDriver): in the process, gone on restart |
//! | `sqlite://path/to/jobs.db`, `sqlite:jobs.db` | `SqliteDriver` (feature `sqlite`): one file, one host |
//! | `postgres://...`, `postgresql://...` | `PostgresDriver` (feature `postgres`): a fleet |

use std::sync::Arc;

use super::{JobDriver, MemoryDriver};
use crate::error::{ErrorCode, JobError};

/// The stores a URL can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// `memory:`
    Memory,
    /// `sqlite:`
    Sqlite,
    /// `postgres:` or `postgresql:`
    Postgres,
}

impl Store {
    /// The store `url`'s scheme names; `X_DRIVER_URL_INVALID` for any other (the URL itself is
    /// never repeated: it may hold a password).
    pub fn of(url: &str) -> Result<Store, JobError> {
        let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("memory") => Ok(Store::Memory),
            Some("sqlite") => Ok(Store::Sqlite),
            Some("postgres" | "postgresql") => Ok(Store::Postgres),
            _ => Err(JobError::new(
                ErrorCode::DriverUrlInvalid,
                "the database URL names no store this build knows",
            )
            .with_fix("start the URL with `memory:`, `sqlite://` or `postgres://`")),
        }
    }
}

/// Connects the driver `url` names. It does not migrate: see [`crate::Jobs::open`], which
/// does. `schema` is the Postgres schema (`public` when `None`); the other stores have none.
pub async fn connect(url: &str, schema: Option<&str>) -> Result<Arc<dyn JobDriver>, JobError> {
    match Store::of(url)? {
        Store::Memory => Ok(Arc::new(MemoryDriver::new())),
        Store::Sqlite => sqlite(url).await,
        Store::Postgres => postgres(url, schema).await,
    }
}

#[cfg(feature = "sqlite")]
async fn sqlite(url: &str) -> Result<Arc<dyn JobDriver>, JobError> {
    Ok(Arc::new(super::SqliteDriver::connect(url).await?))
}

#[cfg(not(feature = "sqlite"))]
async fn sqlite(_url: &str) -> Result<Arc<dyn JobDriver>, JobError> {
    Err(not_built("sqlite"))
}

#[cfg(feature = "postgres")]
async fn postgres(url: &str, schema: Option<&str>) -> Result<Arc<dyn JobDriver>, JobError> {
    let driver = super::PostgresDriver::connect(url).await?;
    let driver = match schema {
        Some(schema) => driver.with_schema(schema)?,
        None => driver,
    };
    Ok(Arc::new(driver))
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_url: &str, _schema: Option<&str>) -> Result<Arc<dyn JobDriver>, JobError> {
    Err(not_built("postgres"))
}

/// The refusal of a store whose driver this build leaves out.
#[cfg(not(all(feature = "sqlite", feature = "postgres")))]
fn not_built(feature: &str) -> JobError {
    JobError::new(
        ErrorCode::DriverUrlInvalid,
        format!("the URL names the {feature} store, and this build has no {feature} driver"),
    )
    .with_fix(format!(
        "enable the `{feature}` feature of the `jobs` crate"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_picks_the_store() {
        assert_eq!(Store::of("memory:").unwrap(), Store::Memory);
        assert_eq!(Store::of("sqlite://jobs.db").unwrap(), Store::Sqlite);
        assert_eq!(Store::of("sqlite::memory:").unwrap(), Store::Sqlite);
        assert_eq!(Store::of("postgres://u@h/db").unwrap(), Store::Postgres);
        assert_eq!(Store::of("PostgreSQL://u@h/db").unwrap(), Store::Postgres);
        let refused = Store::of("mysql://root:hunter2@h/db").unwrap_err();
        assert_eq!(refused.code(), Some(ErrorCode::DriverUrlInvalid));
        assert!(!refused.to_string().contains("hunter2"), "{refused}");
        assert!(Store::of("jobs.db").is_err());
    }
}
