//! The SQLite harness: each test gets its own database file in a fresh directory under the
//! system temp dir (removed when the returned guard drops), so tests run in parallel.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use jobs::driver::{JobDriver, SqliteDriver};
use jobs::sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use jobs::sqlx::{self, ConnectOptions, Connection};

/// A directory of one test's files, removed on drop.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// A new empty directory named after the test.
    pub fn new(test: &str) -> TempDir {
        let random = uuid::Uuid::new_v4().simple().to_string();
        let dir = std::env::temp_dir().join(format!("jobs-sqlite-{test}-{}", &random[..12]));
        std::fs::create_dir_all(&dir).expect("the temp dir is writable");
        TempDir(dir)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The `sqlite://` URL of `jobs.db` in it.
    pub fn url(&self) -> String {
        format!("sqlite://{}", self.0.join("jobs.db").display())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A migrated driver on a fresh file of its own. The file's directory is leaked to the test's
/// lifetime (the conformance cases own only the driver) and removed at the next run's sweep.
pub async fn driver(test: &str) -> Arc<dyn JobDriver> {
    let dir = TempDir::new(test);
    let driver = SqliteDriver::connect(&dir.url())
        .await
        .expect("the test file opens");
    driver.migrate().await.expect("the migrations apply");
    // The cases hold only the driver: keep the directory for the process's life.
    std::mem::forget(dir);
    Arc::new(driver)
}

/// A migrated driver on `dir`'s file, with the directory kept by the caller.
pub async fn driver_in(dir: &TempDir) -> SqliteDriver {
    let driver = SqliteDriver::connect(&dir.url())
        .await
        .expect("the test file opens");
    driver.migrate().await.expect("the migrations apply");
    driver
}

/// Whether another connection holds the file's write lock: `BEGIN IMMEDIATE` without a busy
/// timeout answers `SQLITE_BUSY` at once. The probe closes before answering, so it holds
/// nothing when the caller acts.
pub async fn write_locked(url: &str) -> bool {
    let options = SqliteConnectOptions::from_str(url)
        .expect("url")
        .busy_timeout(Duration::ZERO);
    let mut probe: SqliteConnection = options.connect().await.expect("probe connection");
    let locked = match sqlx::raw_sql("begin immediate").execute(&mut probe).await {
        Ok(_) => {
            sqlx::raw_sql("rollback")
                .execute(&mut probe)
                .await
                .expect("rollback the probe");
            false
        }
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("5") => true,
        Err(e) => panic!("probe the write lock: {e}"),
    };
    probe.close().await.expect("close the probe");
    locked
}
