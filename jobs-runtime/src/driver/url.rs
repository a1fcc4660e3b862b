//! A driver from a URL: the scheme picks the store, so an app switches stores by
//! configuration (`JOBS_URL=sqlite://jobs.db` on a laptop, `postgres://...` in the fleet).
//!
//! | URL | driver |
//! |---|---|
//! | `memory:` | [`MemoryDriver`]: in the process, gone on restart |
//! | `sqlite://path/to/jobs.db`, `sqlite:jobs.db` | `SqliteDriver` (feature `sqlite`): one file, one host |
//! | `postgres://...`, `postgresql://...` | `PostgresDriver` (feature `postgres`): a fleet |
//! | `redis://...`, `rediss://...`, `redis://h1:7000,h2:7001` | `RedisDriver` (feature `redis`): a server or a cluster |
//!
//! Each driver registers its schemes with a [`DriverScheme`], as sqlx's `Any` drivers are
//! installed; a driver outside this crate registers its own the same way, with
//! [`register_driver_scheme!`](crate::register_driver_scheme), and [`crate::Jobs::open`], the
//! `jobs` tool and the MCP server then open its URLs.

use std::sync::Arc;

/// The future a [`DriverScheme`]'s `open` answers (futures' boxed future, `Send`).
pub use futures::future::BoxFuture;

use super::{JobDriver, MemoryDriver};
use crate::error::{ErrorCode, JobError};

/// What opening a URL is told.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct OpenRequest<'a> {
    /// The whole URL, password included: a driver must not repeat it in an error.
    pub url: &'a str,
    /// The schema the caller asked for (Postgres' `--schema`); `None` for the store's default.
    /// A store without schemas ignores it.
    pub schema: Option<&'a str>,
}

/// Opens the driver a URL names (it does not migrate).
pub type OpenDriver =
    for<'a> fn(OpenRequest<'a>) -> BoxFuture<'a, Result<Arc<dyn JobDriver>, JobError>>;

/// A driver's URL schemes and how to open them: registered with
/// [`register_driver_scheme!`](crate::register_driver_scheme).
///
/// ```
/// use std::sync::Arc;
/// use jobs::driver::url::{BoxFuture, DriverScheme, OpenRequest};
/// use jobs::driver::{JobDriver, MemoryDriver};
///
/// fn open(_request: OpenRequest<'_>) -> BoxFuture<'_, Result<Arc<dyn JobDriver>, jobs::JobError>> {
///     Box::pin(async { Ok(Arc::new(MemoryDriver::new()) as Arc<dyn JobDriver>) })
/// }
///
/// jobs::register_driver_scheme!(DriverScheme { schemes: &["scratch"], open });
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), jobs::JobError> {
/// let driver = jobs::driver::url::connect("scratch:", None).await?;
/// assert_eq!(driver.name(), "memory");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DriverScheme {
    /// The URL schemes it opens, lower case, without the colon (`["postgres", "postgresql"]`).
    pub schemes: &'static [&'static str],
    /// Opens the driver a URL with one of those schemes names.
    pub open: OpenDriver,
}

inventory::collect!(DriverScheme);

/// Registers a [`DriverScheme`] (at link time, as `#[job]` registers a job): `Jobs::open`,
/// the `jobs` tool and the MCP server then open its URLs.
#[macro_export]
macro_rules! register_driver_scheme {
    ($scheme:expr) => {
        $crate::__private::inventory::submit! { $scheme }
    };
}

crate::register_driver_scheme!(DriverScheme {
    schemes: &["memory"],
    open: |_| Box::pin(async { Ok(Arc::new(MemoryDriver::new()) as Arc<dyn JobDriver>) }),
});

#[cfg(feature = "sqlite")]
crate::register_driver_scheme!(DriverScheme {
    schemes: &["sqlite"],
    open: |request| {
        Box::pin(async move {
            let driver = super::SqliteDriver::connect(request.url).await?;
            Ok(Arc::new(driver) as Arc<dyn JobDriver>)
        })
    },
});

#[cfg(feature = "postgres")]
crate::register_driver_scheme!(DriverScheme {
    schemes: &["postgres", "postgresql"],
    open: |request| {
        Box::pin(async move {
            let driver = super::PostgresDriver::connect(request.url).await?;
            let driver = match request.schema {
                Some(schema) => driver.with_schema(schema)?,
                None => driver,
            };
            Ok(Arc::new(driver) as Arc<dyn JobDriver>)
        })
    },
});

#[cfg(feature = "redis")]
crate::register_driver_scheme!(DriverScheme {
    schemes: &["redis", "rediss"],
    open: |request| {
        Box::pin(async move {
            let options = super::redis::RedisOptions::from_url(request.url)?;
            // `--schema` on a key-value store is its key prefix.
            let options = match request.schema {
                Some(prefix) => options.with_prefix(prefix)?,
                None => options,
            };
            let driver = super::RedisDriver::connect_with(options).await?;
            Ok(Arc::new(driver) as Arc<dyn JobDriver>)
        })
    },
});

/// The schemes of this crate's own drivers, with the feature that builds each: a URL naming
/// one this build leaves out is told which feature to enable.
const BUILT_IN: [(&str, &str); 5] = [
    ("redis", "redis"),
    ("rediss", "redis"),
    ("sqlite", "sqlite"),
    ("postgres", "postgres"),
    ("postgresql", "postgres"),
];

/// The registered driver `url`'s scheme names; `X_DRIVER_URL_INVALID` for any other (the URL
/// itself is never repeated: it may hold a password).
pub fn scheme_of(url: &str) -> Result<&'static DriverScheme, JobError> {
    let scheme = url
        .split_once(':')
        .map(|(s, _)| s.to_ascii_lowercase())
        .unwrap_or_default();
    if let Some(found) = inventory::iter::<DriverScheme>
        .into_iter()
        .find(|d| d.schemes.contains(&scheme.as_str()))
    {
        return Ok(found);
    }
    if let Some(refused) = not_built(&scheme) {
        return Err(refused);
    }
    let mut known: Vec<&str> = inventory::iter::<DriverScheme>
        .into_iter()
        .flat_map(|d| d.schemes.iter().copied())
        .collect();
    known.sort_unstable();
    Err(JobError::new(
        ErrorCode::DriverUrlInvalid,
        "the database URL names no store this build knows",
    )
    .with_fix(format!(
        "start the URL with one of the registered schemes ({}), or register the driver's \
         with `jobs::register_driver_scheme!`",
        known.join(", ")
    )))
}

/// The refusal of a URL naming one of this crate's stores whose driver this build leaves out.
fn not_built(scheme: &str) -> Option<JobError> {
    let (_, feature) = BUILT_IN.iter().find(|(s, _)| *s == scheme)?;
    Some(
        JobError::new(
            ErrorCode::DriverUrlInvalid,
            format!("the URL names the {feature} store, and this build has no {feature} driver"),
        )
        .with_fix(format!(
            "enable the `{feature}` feature of the `jobs-runtime` package"
        )),
    )
}

/// Connects the driver `url` names. It does not migrate: see [`crate::Jobs::open`], which
/// does. `schema` is the Postgres schema (`public` when `None`); the other stores have none.
pub async fn connect(url: &str, schema: Option<&str>) -> Result<Arc<dyn JobDriver>, JobError> {
    let scheme = scheme_of(url)?;
    (scheme.open)(OpenRequest { url, schema }).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schemes(url: &str) -> &'static [&'static str] {
        scheme_of(url).unwrap().schemes
    }

    #[test]
    fn the_scheme_picks_the_store() {
        assert_eq!(schemes("memory:"), ["memory"]);
        #[cfg(feature = "sqlite")]
        {
            assert_eq!(schemes("sqlite://jobs.db"), ["sqlite"]);
            assert_eq!(schemes("sqlite::memory:"), ["sqlite"]);
        }
        #[cfg(feature = "postgres")]
        {
            assert_eq!(schemes("postgres://u@h/db"), ["postgres", "postgresql"]);
            assert_eq!(schemes("PostgreSQL://u@h/db"), ["postgres", "postgresql"]);
        }
        let refused = scheme_of("mysql://root:hunter2@h/db").unwrap_err();
        assert_eq!(refused.code(), Some(ErrorCode::DriverUrlInvalid));
        assert!(!refused.to_string().contains("hunter2"), "{refused}");
        assert!(refused.to_string().contains("memory"), "{refused}");
        assert!(scheme_of("jobs.db").is_err());
    }

    #[cfg(not(feature = "sqlite"))]
    #[test]
    fn a_built_in_store_left_out_names_its_feature() {
        let refused = scheme_of("sqlite://jobs.db").unwrap_err();
        assert!(
            refused.to_string().contains("`sqlite` feature"),
            "{refused}"
        );
    }
}
