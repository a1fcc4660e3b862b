//! Postgres connection and configuration errors, against real loopback only: each names its
//! cause and its fix, configuration errors are terminal, and an unreachable server is reported
//! within the connect timeout, naming the host, the port and the OS error. Also the driver's
//! backstops for values the client never lets through (a direct port call).

use crate::support;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use jobs::clock::{Clock, SystemClock};
use jobs::driver::postgres::DEFAULT_CONNECT_TIMEOUT;
use jobs::driver::{EnqueueRequest, PostgresDriver};
use jobs::prelude::*;
use jobs::sqlx::postgres::PgConnectOptions;
use jobs::sqlx::{self, AssertSqlSafe};
use jobs::ErrorClass;
use support::pg;

/// A bound far above any timeout these tests configure, and below the default one: no test
/// waits out a default timeout, and none asserts tight wall-clock numbers.
const GENEROUS: Duration = Duration::from_secs(4);

/// The test server's host and port.
fn server() -> (String, u16) {
    let options: PgConnectOptions = pg::database_url().parse().expect("DATABASE_URL parses");
    (options.get_host().to_string(), options.get_port())
}

/// The test server's URL with another database in its path (user, password, host, port and
/// query kept).
fn with_database(database: &str) -> String {
    let url = pg::database_url();
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let after_scheme = base.find("://").map_or(0, |at| at + 3);
    let authority_end = base[after_scheme..]
        .find('/')
        .map_or(base.len(), |at| after_scheme + at);
    let mut out = format!("{}/{database}", &base[..authority_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

fn assert_terminal(error: &JobError, code: ErrorCode) {
    assert_eq!(error.code(), Some(code), "{error}");
    assert_eq!(error.class(), ErrorClass::Terminal, "{error}");
    assert!(
        !error
            .to_string()
            .contains("check the database is reachable"),
        "a configuration error is not a reachability problem: {error}"
    );
}

async fn connect_err(url: &str, timeout: Duration) -> JobError {
    match PostgresDriver::connect_with_timeout(url, timeout).await {
        Ok(_) => panic!("expected the connect to fail"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn a_closed_port_is_refused_at_once_naming_host_port_and_the_os_error() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let started = Instant::now();
    let error = connect_err(
        &format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        Duration::from_secs(2),
    )
    .await;
    assert!(started.elapsed() < GENEROUS, "{:?}", started.elapsed());
    assert_eq!(error.code(), Some(ErrorCode::DriverUnavailable), "{error}");
    assert_eq!(error.class(), ErrorClass::Retryable);
    let message = error.message().to_lowercase();
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{error}");
    assert!(message.contains("connection refused"), "{error}");
    assert!(!message.contains("pool timed out"), "{error}");
    // The fix says what to do, and does not promise a retry nobody makes.
    let fix = error.fix().unwrap();
    assert!(fix.contains("host and port"), "{fix}");
    assert!(fix.contains("does not retry"), "{fix}");
    assert!(!fix.contains("is retried"), "{fix}");
}

/// A closed port on 127.0.0.1, found by binding port 0 and letting it go.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[tokio::test]
async fn a_pool_that_reaches_nothing_names_its_host_and_port_without_credentials() {
    let port = closed_port();
    let pool = jobs::sqlx::postgres::PgPoolOptions::new()
        // The pool's own bound on waiting for a connection, not a sleep: a closed port
        // refuses at once and the pool gives up within it.
        .acquire_timeout(Duration::from_millis(500))
        .connect_lazy(&format!(
            "postgres://app:hunter2-secret@127.0.0.1:{port}/postgres"
        ))
        .expect("a lazy pool connects nothing yet");
    let jobs = Jobs::new(PostgresDriver::new(pool, "public").unwrap());
    let started = Instant::now();
    let error = jobs.stats().await.unwrap_err();
    assert!(started.elapsed() < GENEROUS, "{:?}", started.elapsed());
    assert_eq!(error.code(), Some(ErrorCode::DriverUnavailable), "{error}");
    assert_eq!(error.class(), ErrorClass::Retryable);
    assert!(
        error
            .message()
            .contains(&format!("the pool connects to 127.0.0.1:{port}")),
        "{error}"
    );
    assert!(!error.to_string().contains("hunter2"), "{error}");
    assert!(!error.to_string().contains("app:"), "{error}");
    let fix = error.fix().unwrap();
    assert!(fix.contains("host and port the message names"), "{fix}");
    assert!(!fix.contains("the operation is retried"), "{fix}");
}

#[tokio::test]
async fn a_bad_schema_name_is_a_terminal_configuration_error_not_an_invariant() {
    let pool = jobs::sqlx::postgres::PgPoolOptions::new()
        .connect_lazy(&format!(
            "postgres://app@127.0.0.1:{}/postgres",
            closed_port()
        ))
        .expect("a lazy pool connects nothing yet");
    for bad in ["Jobs", "1jobs", "a;drop table x", ""] {
        let Err(error) = PostgresDriver::new(pool.clone(), bad) else {
            panic!("`{bad}` was accepted");
        };
        assert_terminal(&error, ErrorCode::DriverUrlInvalid);
        assert!(
            error.fix().unwrap().contains("lower-case letters"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn a_server_that_never_answers_is_reported_at_the_connect_timeout() {
    // Listening (the kernel completes the handshake) but never reading: the startup exchange
    // gets no answer.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let started = Instant::now();
    let error = connect_err(
        &format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        Duration::from_millis(300),
    )
    .await;
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < GENEROUS, "{waited:?}");
    assert_eq!(error.code(), Some(ErrorCode::DriverUnavailable), "{error}");
    assert!(
        error.message().contains(&format!(
            "no answer from 127.0.0.1:{port} within the connect timeout of 300ms"
        )),
        "{error}"
    );
    assert!(error.fix().unwrap().contains("connect_with_timeout"));
    drop(listener);
    assert_eq!(DEFAULT_CONNECT_TIMEOUT, Duration::from_secs(5));
}

#[tokio::test]
async fn a_malformed_url_is_a_terminal_configuration_error_without_the_password() {
    for url in [
        "not a url",
        "postgres://postgres:hunter2-secret@127.0.0.1:notaport/postgres",
        "postgres://postgres:hunter2-secret@127.0.0.1:99999/postgres",
    ] {
        let started = Instant::now();
        let error = connect_err(url, Duration::from_secs(2)).await;
        assert!(started.elapsed() < GENEROUS);
        assert_terminal(&error, ErrorCode::DriverUrlInvalid);
        assert!(!error.to_string().contains("hunter2"), "{error}");
        assert!(
            error
                .fix()
                .unwrap()
                .contains("postgres://user:password@host:port/database"),
            "{error}"
        );
    }
}

#[tokio::test]
async fn an_unknown_database_is_a_terminal_configuration_error() {
    let database = format!("jobs_no_such_db_{}", uuid::Uuid::new_v4().simple());
    let error = connect_err(&with_database(&database), Duration::from_secs(2)).await;
    assert_terminal(&error, ErrorCode::DriverDatabaseUnknown);
    assert!(error.message().contains("3D000"), "{error}");
    assert!(error.fix().unwrap().contains("createdb"), "{error}");
}

#[tokio::test]
async fn a_refused_login_is_a_terminal_configuration_error() {
    // The test server trusts every login, so a wrong password passes; a role that does not
    // exist is refused all the same (28000). The wrong password's own sqlstate (28P01) is
    // pinned by the classification's unit test.
    let (host, port) = server();
    let role = format!(
        "jobs_no_such_role_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let error = connect_err(
        &format!("postgres://{role}:wrong@{host}:{port}/postgres"),
        Duration::from_secs(2),
    )
    .await;
    assert_terminal(&error, ErrorCode::DriverAuthFailed);
    assert!(error.message().contains("28000") || error.message().contains("28P01"));
    assert!(
        error.fix().unwrap().contains("user and password"),
        "{error}"
    );
    assert!(!error.to_string().contains("wrong@"), "{error}");
}

#[tokio::test]
async fn a_schema_without_the_migrations_is_a_terminal_configuration_error() {
    let driver = PostgresDriver::connect(pg::database_url())
        .await
        .expect("the test server is up");
    // Named as the harness names its schemas, so a failed run's leftover is swept.
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let random = uuid::Uuid::new_v4().simple().to_string();
    let bare = format!("jt_{secs}_{}_{}", &random[..8], &random[8..20]);
    let missing = format!("jt_{secs}_{}_{}", &random[20..28], &random[..12]);
    sqlx::raw_sql(AssertSqlSafe(format!("create schema {bare}")))
        .execute(driver.pool())
        .await
        .expect("create schema");
    for schema in [&bare, &missing] {
        let jobs = Jobs::new(driver.clone().with_schema(schema).unwrap());
        let error = jobs.stats().await.unwrap_err();
        assert_terminal(&error, ErrorCode::DriverSchemaMissing);
        assert!(error.fix().unwrap().contains("migrate()"), "{error}");
    }
    sqlx::raw_sql(AssertSqlSafe(format!("drop schema {bare}")))
        .execute(driver.pool())
        .await
        .expect("drop schema");
}

/// A request the client would refuse, sent straight to the port.
fn raw_request(key: String) -> EnqueueRequest {
    let now = SystemClock.now();
    EnqueueRequest {
        id: uuid::Uuid::now_v7(),
        run_id: uuid::Uuid::now_v7(),
        name: "backstop".into(),
        queue: "default".into(),
        input: serde_json::json!({}),
        idempotency_key: key,
        tenant_id: None,
        max_attempts: 1,
        run_at: now,
        priority: 0,
        on_conflict: Default::default(),
        traceparent: None,
        actor: None,
        unique_for: None,
        dependencies: None,
        now,
    }
}

#[tokio::test]
async fn the_drivers_backstops_refuse_what_postgres_cannot_store_as_terminal() {
    let driver = pg::driver("the_drivers_backstops").await;
    // A random key too large for a btree index entry (54000), whatever Postgres compresses.
    let mut key = String::new();
    while key.len() < 10_000 {
        key.push_str(&uuid::Uuid::new_v4().simple().to_string());
    }
    let error = driver.job_enqueue(&raw_request(key)).await.unwrap_err();
    assert_terminal(&error, ErrorCode::LimitExceeded);
    // A NUL in a text column.
    let error = driver
        .job_enqueue(&raw_request("nul\0key".into()))
        .await
        .unwrap_err();
    assert_terminal(&error, ErrorCode::ValueUnstorable);
    assert!(!error.to_string().contains("nul\0key"), "{error}");
}
