//! The PostgreSQL test harness: one server per machine-run, one schema per test.
//!
//! Where the server comes from:
//!
//! 1. `DATABASE_URL` set: that server, as is. Nothing else is consulted (a server listening on
//!    5432 is never used unless `DATABASE_URL` names it).
//! 2. `DATABASE_URL` unset: a throwaway cluster this harness starts itself from the PostgreSQL
//!    server binaries (`initdb`, `pg_ctl`), found on `PATH` or under
//!    `/usr/lib/postgresql/*/bin` (the newest version), or only in `JOBS_TEST_PG_BIN` when that
//!    is set. It listens on 127.0.0.1 on a free port, with trust auth, `max_connections = 300`
//!    and durability off (`fsync`, `synchronous_commit`, `full_page_writes`). Its data and
//!    socket live in a fresh temp dir (`$TMPDIR/jobs-pg-*`); as root, that dir belongs to the
//!    `postgres` user and `initdb`/`pg_ctl` run through `runuser -u postgres` (initdb refuses
//!    root).
//!
//!    Every test process shares it: the first process to take the lock on
//!    `$CARGO_TARGET_TMPDIR/jobs-pg/cluster.lock` starts the cluster and writes its port and data
//!    dir to `cluster.state` beside the lock; the others (and later runs) find it there and
//!    reuse it once `pg_ctl status` and a TCP connect agree it is up. The cluster is **left
//!    running** after the tests, so the next run starts in milliseconds; stop it with
//!    `pg_ctl stop -D <data dir>` (the second line of `cluster.state`). A reboot or a temp-dir
//!    sweep just makes the next run start a new one.
//! 3. Neither: every test fails with "set DATABASE_URL to a PostgreSQL server, or install the
//!    PostgreSQL server binaries (apt-get install postgresql)".
//!
//! Each test gets its own schema, `jt_<unix secs>_<test name hash>_<random>`, on a pool of at
//! most 4 connections, so hundreds of tests run in parallel on one server. Schemas are not
//! dropped when a test ends (a failing test's rows stay readable); each process drops the
//! harness's schemas older than an hour when it first connects.

#![allow(dead_code)]

use std::collections::hash_map::DefaultHasher;
use std::fs::{self, File, OpenOptions};
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jobs::conformance::sqlx;
use jobs::driver::{JobDriver, PostgresDriver};
use sqlx::postgres::{PgPool, PgPoolOptions};

/// What a test is told when there is no server to be had.
pub const NO_SERVER: &str = "no PostgreSQL server for the tests: set DATABASE_URL to a PostgreSQL \
     server, or install the PostgreSQL server binaries (apt-get install postgresql)";

/// Connections per test pool: enough for the concurrency cases, small enough for hundreds of
/// tests on one server.
pub const MAX_CONNECTIONS_PER_TEST: u32 = 4;

/// Schemas the harness made longer ago than this are dropped by the next process.
const STALE_SCHEMA_AGE: Duration = Duration::from_secs(3600);

/// The server every test of this machine-run talks to: `DATABASE_URL`, or the shared
/// throwaway cluster (started on first use). Panics with [`NO_SERVER`] when there is neither.
pub fn database_url() -> &'static str {
    static URL: OnceLock<Result<String, String>> = OnceLock::new();
    let url = URL.get_or_init(|| match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Ok(url),
        _ => throwaway_cluster(),
    });
    match url {
        Ok(url) => url,
        Err(message) => panic!("{message}"),
    }
}

/// A fresh schema for `test`, migrated, on its own small pool.
pub async fn schema(test: &str) -> (PgPool, String) {
    let url = database_url();
    // The driver's own session settings, so the tests run the plans production runs.
    let options = PostgresDriver::tune(
        url.parse()
            .unwrap_or_else(|e| panic!("DATABASE_URL does not parse: {e}")),
    );
    let pool = PgPoolOptions::new()
        .max_connections(MAX_CONNECTIONS_PER_TEST)
        .acquire_timeout(Duration::from_secs(60))
        .connect_with(options)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to the test server {url}: {e}"));
    sweep_stale_schemas(&pool).await;
    let name = schema_name(test);
    PostgresDriver::new(pool.clone(), &name)
        .unwrap_or_else(|e| panic!("schema name `{name}` refused: {e}"))
        .migrate()
        .await
        .unwrap_or_else(|e| panic!("migrating schema `{name}` failed: {e}"));
    (pool, name)
}

/// A Postgres driver over a fresh, migrated schema for `test`.
pub async fn driver(test: &str) -> Arc<dyn JobDriver> {
    let (pool, name) = schema(test).await;
    let driver = PostgresDriver::new(pool, &name).expect("the schema was accepted once already");
    Arc::new(driver)
}

/// `jt_<unix secs>_<hash of the test name>_<random>`: unique per call, readable per test, and
/// dated so a later process can sweep it.
fn schema_name(test: &str) -> String {
    let mut hasher = DefaultHasher::new();
    test.hash(&mut hasher);
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("jt_{secs}_{:08x}_{}", hasher.finish() as u32, &random[..12])
}

/// Drops the harness's schemas older than [`STALE_SCHEMA_AGE`], once per process.
async fn sweep_stale_schemas(pool: &PgPool) {
    static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    SWEPT
        .get_or_init(|| async {
            let names: Vec<String> = sqlx::query_scalar(
                r"select nspname::text from pg_namespace where nspname ~ '^jt_[0-9]+_[0-9a-f]{8}_[0-9a-f]{12}$'",
            )
            .fetch_all(pool)
            .await
            .unwrap_or_default();
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            for name in names {
                let made: u64 = name
                    .split('_')
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(now);
                if now.saturating_sub(made) > STALE_SCHEMA_AGE.as_secs() {
                    // The name matched the pattern above: letters, digits and underscores only.
                    let drop = format!("drop schema if exists {name} cascade");
                    let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(drop)).execute(pool).await;
                }
            }
        })
        .await;
}

// ---------------------------------------------------------------------------------------------
// The throwaway cluster.

/// Where the lock and the state of the shared cluster live: under the target dir, so every test
/// binary of this checkout finds the same one.
fn state_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("jobs-pg")
}

struct Cluster {
    port: u16,
    data: PathBuf,
}

/// Starts the shared cluster, or finds the one another process started.
fn throwaway_cluster() -> Result<String, String> {
    let bin = find_server_binaries().ok_or_else(|| NO_SERVER.to_string())?;
    let dir = state_dir();
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let lock_path = dir.join("cluster.lock");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
    // Held until this function returns: one process starts the cluster, the others wait and
    // then find it running.
    lock.lock()
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))?;
    let runner = Runner::new()?;
    let state_path = dir.join("cluster.state");
    if let Some(cluster) = read_state(&state_path) {
        if runner.is_running(&bin, &cluster) {
            return Ok(url(cluster.port));
        }
    }
    let started = Instant::now();
    let cluster = start_cluster(&bin, &runner)?;
    let mut state = File::create(&state_path)
        .map_err(|e| format!("cannot write {}: {e}", state_path.display()))?;
    writeln!(state, "{}\n{}", cluster.port, cluster.data.display())
        .map_err(|e| format!("cannot write {}: {e}", state_path.display()))?;
    eprintln!(
        "started a throwaway PostgreSQL cluster on 127.0.0.1:{} in {} ms (data: {}; left running, \
         stop it with `pg_ctl stop -D {}`)",
        cluster.port,
        started.elapsed().as_millis(),
        cluster.data.display(),
        cluster.data.display(),
    );
    drop(lock);
    Ok(url(cluster.port))
}

fn url(port: u16) -> String {
    format!("postgres://postgres@127.0.0.1:{port}/postgres")
}

fn read_state(path: &Path) -> Option<Cluster> {
    let text = fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let port = lines.next()?.trim().parse().ok()?;
    let data = PathBuf::from(lines.next()?.trim());
    Some(Cluster { port, data })
}

/// The directory holding `initdb` and `pg_ctl`: `JOBS_TEST_PG_BIN` alone when set, else `PATH`,
/// else the newest `/usr/lib/postgresql/*/bin`.
fn find_server_binaries() -> Option<PathBuf> {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("JOBS_TEST_PG_BIN") {
        let dir = PathBuf::from(dir);
        return has_both(&dir).then_some(dir);
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if has_both(&dir) {
                // A symlinked `initdb` (Debian's /usr/local/bin, Homebrew) points into the real
                // bin dir, which also holds `postgres`.
                let real = fs::canonicalize(dir.join("initdb"))
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf));
                return Some(real.filter(|d| has_both(d)).unwrap_or(dir));
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            has_both(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// Runs the server binaries as an unprivileged user: ourselves, or `postgres` when we are root.
struct Runner {
    /// `(uid, gid)` of `postgres` and the `runuser` binary, when we are root.
    as_postgres: Option<(u32, u32, PathBuf)>,
}

impl Runner {
    fn new() -> Result<Self, String> {
        if id(&["-u"])? != 0 {
            return Ok(Runner { as_postgres: None });
        }
        let uid = id(&["-u", "postgres"]).map_err(|_| {
            "running as root, and initdb refuses root: create a `postgres` user \
             (apt-get install postgresql does), or set DATABASE_URL"
                .to_string()
        })?;
        let gid = id(&["-g", "postgres"])?;
        // Often in /usr/sbin, which a minimal PATH leaves out.
        let path = std::env::var_os("PATH").unwrap_or_default();
        let runuser = std::env::split_paths(&path)
            .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
            .map(|dir| dir.join("runuser"))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                "running as root, and initdb refuses root: install `runuser` (util-linux) to run \
                 it as `postgres`, or set DATABASE_URL"
                    .to_string()
            })?;
        Ok(Runner {
            as_postgres: Some((uid, gid, runuser)),
        })
    }

    fn command(&self, program: &Path) -> Command {
        match &self.as_postgres {
            Some((_, _, runuser)) => {
                let mut command = Command::new(runuser);
                command.args(["-u", "postgres", "--"]).arg(program);
                command
            }
            None => Command::new(program),
        }
    }

    /// A fresh temp dir the server user owns (mode 0700).
    fn fresh_dir(&self) -> Result<PathBuf, String> {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!(
            "jobs-pg-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        ));
        fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        if let Some((uid, gid, _)) = self.as_postgres {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .map_err(|e| format!("cannot hand {} to postgres: {e}", dir.display()))?;
        }
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot restrict {}: {e}", dir.display()))?;
        Ok(dir)
    }

    fn is_running(&self, bin: &Path, cluster: &Cluster) -> bool {
        let status = self
            .command(&bin.join("pg_ctl"))
            .args(["status", "-D"])
            .arg(&cluster.data)
            .output();
        status.is_ok_and(|o| o.status.success())
            && TcpStream::connect_timeout(
                &SocketAddr::from(([127, 0, 0, 1], cluster.port)),
                Duration::from_secs(2),
            )
            .is_ok()
    }
}

fn id(args: &[&str]) -> Result<u32, String> {
    let out = Command::new("id")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run `id`: {e}"))?;
    if !out.status.success() {
        return Err(format!("`id {}` failed", args.join(" ")));
    }
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| format!("`id {}` answered no number", args.join(" ")))
}

fn check(what: &str, out: std::io::Result<Output>) -> Result<(), String> {
    let out = out.map_err(|e| format!("cannot run {what} (or the runuser around it): {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

fn start_cluster(bin: &Path, runner: &Runner) -> Result<Cluster, String> {
    let root = runner.fresh_dir()?;
    let data = root.join("data");
    check(
        "initdb",
        runner
            .command(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .output(),
    )?;
    // A free port can be taken between the probe and the start: try a few.
    let mut last = String::new();
    for _ in 0..5 {
        let port = free_port()?;
        let options = format!(
            "-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={} \
             -c max_connections=300 -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off",
            root.display()
        );
        let started = runner
            .command(&bin.join("pg_ctl"))
            .args(["start", "-w", "-t", "60", "-D"])
            .arg(&data)
            .arg("-l")
            .arg(root.join("server.log"))
            .args(["-o", &options])
            .output();
        match check("pg_ctl start", started) {
            Ok(()) => return Ok(Cluster { port, data }),
            Err(e) => last = e,
        }
    }
    let log = fs::read_to_string(root.join("server.log")).unwrap_or_default();
    Err(format!("{last}\nserver log:\n{log}"))
}

fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot find a free port on 127.0.0.1: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port on 127.0.0.1: {e}"))
}

// ---------------------------------------------------------------------------------------------
// A private cluster, for a test that stops and starts its server.

/// A throwaway cluster of one test's own, which it may stop and start (the shared one must not
/// be: other tests run on it at the same time). Stopped and removed when dropped.
pub struct PrivateCluster {
    bin: PathBuf,
    runner: Runner,
    cluster: Cluster,
    root: PathBuf,
}

/// Starts a private cluster from the server binaries (found as for the shared one). `Err` says
/// why there is none (no binaries, no way to run them) and how to fix it: the caller fails
/// with that message.
pub fn private_cluster() -> Result<PrivateCluster, String> {
    let bin = find_server_binaries().ok_or_else(|| {
        "no PostgreSQL server binaries (initdb, pg_ctl) to start a private cluster: install \
         the PostgreSQL server (apt-get install postgresql) or set JOBS_TEST_PG_BIN"
            .to_string()
    })?;
    let runner = Runner::new()?;
    let cluster = start_cluster(&bin, &runner)?;
    let root = cluster
        .data
        .parent()
        .map(Path::to_path_buf)
        .ok_or("the data dir has no parent")?;
    Ok(PrivateCluster {
        bin,
        runner,
        cluster,
        root,
    })
}

impl PrivateCluster {
    /// Its URL.
    pub fn url(&self) -> String {
        url(self.cluster.port)
    }

    /// Stops the server (`pg_ctl stop -m fast`: every session is cut).
    pub fn stop(&self) -> Result<(), String> {
        check(
            "pg_ctl stop",
            self.runner
                .command(&self.bin.join("pg_ctl"))
                .args(["stop", "-w", "-t", "60", "-m", "fast", "-D"])
                .arg(&self.cluster.data)
                .output(),
        )
    }

    /// Starts it again on the same port, with the options it first started with.
    pub fn start(&self) -> Result<(), String> {
        check(
            "pg_ctl start",
            self.runner
                .command(&self.bin.join("pg_ctl"))
                .args(["start", "-w", "-t", "60", "-D"])
                .arg(&self.cluster.data)
                .arg("-l")
                .arg(self.root.join("server.log"))
                .args(["-o", &server_options(self.cluster.port, &self.root)])
                .output(),
        )
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = self
            .runner
            .command(&self.bin.join("pg_ctl"))
            .args(["stop", "-w", "-m", "immediate", "-D"])
            .arg(&self.cluster.data)
            .output();
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// The options [`start_cluster`] starts a server with.
fn server_options(port: u16, root: &Path) -> String {
    format!(
        "-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={} \
         -c max_connections=300 -c fsync=off -c synchronous_commit=off \
         -c full_page_writes=off",
        root.display()
    )
}

/// A fresh schema for `test` on the server at `url` (a private cluster), migrated, on its own
/// small pool.
pub async fn schema_on(url: &str, test: &str) -> (PgPool, String) {
    let pool = PgPoolOptions::new()
        .max_connections(MAX_CONNECTIONS_PER_TEST)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to the test server {url}: {e}"));
    let name = schema_name(test);
    PostgresDriver::new(pool.clone(), &name)
        .unwrap_or_else(|e| panic!("schema name `{name}` refused: {e}"))
        .migrate()
        .await
        .unwrap_or_else(|e| panic!("migrating schema `{name}` failed: {e}"));
    (pool, name)
}
