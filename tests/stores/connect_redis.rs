//! Opening a Redis store, and what it refuses: a server keeping less than the URL requires, a
//! wrong password, a user without scripts, a server without functions (older than Redis 7.0), a
//! closed port (at once), a silent one (at the connect timeout), a value over the server's
//! limit, a full server, and an enqueue in a caller's transaction; and the function library: a
//! server that lost it is given it again, other builds' libraries are deleted at connect. Each
//! on a `redis-server` of the test's own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jobs::driver::{JobDriver, RedisDriver};
use jobs::prelude::*;
use jobs::{ErrorClass, ErrorCode, Jobs};

use crate::support;
use support::redis::{Persistence, RedisServer};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Blob {
    text: String,
}

#[job(key = "{text}", tenant = none)]
async fn carry_blob(_run: Run, _input: Blob) -> Result<(), JobError> {
    Ok(())
}

fn refused(result: Result<RedisDriver, JobError>) -> JobError {
    match result {
        Ok(_) => panic!("the connect was expected to be refused"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn a_server_keeping_less_than_the_url_requires_is_refused_with_the_fix() {
    let plain = RedisServer::start("durability_none", Persistence::None);
    let everysec = RedisServer::start("durability_everysec", Persistence::AofEverySec);
    let always = RedisServer::start("durability_always", Persistence::AofAlways);
    for (server, required) in [
        (&plain, "everysec"),
        (&plain, "always"),
        (&everysec, "always"),
    ] {
        let url = format!("{}/?require_durability={required}", server.url());
        let error = refused(RedisDriver::connect(&url).await);
        assert!(error.is(ErrorCode::DriverDurabilityInsufficient), "{error}");
        assert_eq!(error.class(), ErrorClass::Terminal);
        assert!(
            error.fix().unwrap_or_default().contains("appendfsync"),
            "{error:?}"
        );
    }
    for (server, required, kept) in [
        (&plain, "none", jobs::driver::redis::Durability::None),
        (
            &everysec,
            "everysec",
            jobs::driver::redis::Durability::EverySec,
        ),
        (&always, "always", jobs::driver::redis::Durability::Always),
    ] {
        let url = format!("{}/?require_durability={required}", server.url());
        let driver = RedisDriver::connect(&url)
            .await
            .expect("enough is accepted");
        assert_eq!(driver.durability().await.unwrap(), kept);
    }
}

#[tokio::test]
async fn a_server_that_evicts_any_key_is_refused_and_volatile_eviction_is_not() {
    let server = RedisServer::start("eviction", Persistence::None);
    assert_eq!(
        server.cli(&["config", "set", "maxmemory-policy", "allkeys-lru"]),
        "OK"
    );
    let error = refused(RedisDriver::connect(&server.url()).await);
    assert!(error.is(ErrorCode::DriverDurabilityInsufficient), "{error}");
    assert!(
        error.fix().unwrap_or_default().contains("noeviction"),
        "{error:?}"
    );
    assert_eq!(
        server.cli(&["config", "set", "maxmemory-policy", "volatile-lru"]),
        "OK"
    );
    RedisDriver::connect(&server.url())
        .await
        .expect("volatile-* evicts only keys with an expiry, and the driver sets none");
}

#[tokio::test]
async fn a_wrong_or_missing_password_is_auth_failed_and_never_repeated() {
    let server = RedisServer::start("auth", Persistence::None);
    assert_eq!(
        server.cli(&["config", "set", "requirepass", "right-pw"]),
        "OK"
    );
    let port = server.port();
    for url in [
        format!("redis://:wrong-pw@127.0.0.1:{port}"),
        format!("redis://127.0.0.1:{port}"),
    ] {
        let error = refused(RedisDriver::connect(&url).await);
        assert!(error.is(ErrorCode::DriverAuthFailed), "{error}");
        assert_eq!(error.class(), ErrorClass::Terminal);
        assert!(!format!("{error:?}").contains("wrong-pw"), "{error:?}");
    }
    let url = format!("redis://:right-pw@127.0.0.1:{port}");
    RedisDriver::connect(&url)
        .await
        .expect("the right password opens it");
}

#[tokio::test]
async fn a_user_without_scripts_is_refused_at_connect() {
    let server = RedisServer::start("no_scripts", Persistence::None);
    let acl = [
        "acl",
        "setuser",
        "noscripts",
        "on",
        ">pw",
        "~*",
        "+@all",
        "-@scripting",
    ];
    assert_eq!(server.cli(&acl), "OK");
    let url = format!("redis://noscripts:pw@127.0.0.1:{}", server.port());
    let error = refused(RedisDriver::connect(&url).await);
    assert!(error.is(ErrorCode::DriverAuthFailed), "{error}");
    assert!(
        error.fix().unwrap_or_default().contains("+@scripting"),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_server_without_functions_is_refused_at_connect() {
    // What a server older than Redis 7.0 answers to `FUNCTION LOAD`: an unknown command.
    let server = RedisServer::start_with(
        "no_functions",
        Persistence::None,
        &["--rename-command", "FUNCTION", ""],
    );
    let error = refused(RedisDriver::connect(&server.url()).await);
    assert!(error.is(ErrorCode::DriverUrlInvalid), "{error}");
    assert_eq!(error.class(), ErrorClass::Terminal);
    assert!(
        error.fix().unwrap_or_default().contains("Redis 7.0"),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_server_that_lost_the_functions_is_given_them_again() {
    // A server flushed, or restarted without persistence, after the driver loaded its library.
    let server = RedisServer::start("functions_lost", Persistence::None);
    let jobs = Jobs::new(RedisDriver::connect(&server.url()).await.unwrap());
    let first = jobs
        .enqueue::<CarryBlob>(Blob { text: "a".into() })
        .await
        .unwrap();
    assert_eq!(server.cli(&["function", "flush"]), "OK");
    assert_eq!(server.cli(&["function", "list"]), "");
    let second = jobs
        .enqueue::<CarryBlob>(Blob { text: "b".into() })
        .await
        .expect("the call loads the library again and runs");
    assert_ne!(first.id, second.id);
    assert!(server.cli(&["function", "list"]).contains("jobs_"));
}

#[tokio::test]
async fn a_connect_deletes_the_libraries_of_other_builds_and_no_others() {
    let server = RedisServer::start("other_builds", Persistence::None);
    let other_build = "jobs_00000000000000aa";
    let loaded = |name: &str, function: &str| {
        let source = format!(
            "#!lua name={name}\nredis.register_function('{function}', function() return 1 end)"
        );
        assert_eq!(server.cli(&["function", "load", &source]), name);
    };
    loaded(other_build, "jobs_00000000000000aa_enqueue");
    loaded("app_library", "app_function");
    let jobs = Jobs::new(RedisDriver::connect(&server.url()).await.unwrap());
    let list = server.cli(&["function", "list"]);
    assert!(!list.contains(other_build), "{list}");
    assert!(
        list.contains("app_library"),
        "an application's own library stays"
    );
    let ours: Vec<&str> = list
        .lines()
        .filter(|l| l.starts_with("jobs_") && l.len() == 21)
        .collect();
    assert_eq!(ours.len(), 1, "{list}");
    jobs.enqueue::<CarryBlob>(Blob { text: "t".into() })
        .await
        .unwrap();
}

#[tokio::test]
async fn a_closed_port_fails_at_once_and_a_silent_one_at_the_connect_timeout() {
    // Closed: nothing listens on a port the kernel just handed out and took back.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let timeout_ms = 3_000;
    let started = Instant::now();
    let url = format!("redis://127.0.0.1:{port}/?connect_timeout_ms={timeout_ms}");
    let error = refused(RedisDriver::connect(&url).await);
    assert!(error.is(ErrorCode::DriverUnavailable), "{error}");
    assert_eq!(error.class(), ErrorClass::Retryable);
    assert!(
        started.elapsed() < Duration::from_millis(timeout_ms),
        "a refused connection is reported without waiting for the timeout"
    );
    // Silent: a listener whose backlog completes the handshake and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let timeout_ms = 300;
    let started = Instant::now();
    let url = format!("redis://127.0.0.1:{port}/?connect_timeout_ms={timeout_ms}&response_timeout_ms={timeout_ms}");
    let error = refused(RedisDriver::connect(&url).await);
    assert!(error.is(ErrorCode::DriverUnavailable), "{error}");
    assert!(started.elapsed() >= Duration::from_millis(timeout_ms));
    drop(silent);
}

#[tokio::test]
async fn a_value_over_the_servers_limit_is_refused_before_any_write() {
    let server = RedisServer::start("oversized", Persistence::None);
    assert_eq!(
        server.cli(&["config", "set", "proto-max-bulk-len", "1048576"]),
        "OK"
    );
    let driver = RedisDriver::connect(&server.url()).await.unwrap();
    let jobs = Jobs::new(driver.clone());
    let big = Blob {
        text: "x".repeat(2 * 1024 * 1024),
    };
    let error = jobs.enqueue::<CarryBlob>(big).await.unwrap_err();
    assert!(error.is(ErrorCode::LimitExceeded), "{error}");
    assert!(
        !error.to_string().contains("xxxx"),
        "no payload in the message"
    );
    assert_eq!(server.cli(&["dbsize"]), "0", "nothing was written");
    // The connection is still good.
    jobs.enqueue::<CarryBlob>(Blob {
        text: "small".into(),
    })
    .await
    .expect("a small job after the refusal");
}

#[tokio::test]
async fn a_full_server_refuses_writes_as_unavailable_not_lost() {
    let server = RedisServer::start("oom", Persistence::None);
    let driver = RedisDriver::connect(&server.url()).await.unwrap();
    let jobs = Jobs::new(driver);
    jobs.enqueue::<CarryBlob>(Blob {
        text: "before".into(),
    })
    .await
    .unwrap();
    assert_eq!(server.cli(&["config", "set", "maxmemory", "1"]), "OK");
    let error = jobs
        .enqueue::<CarryBlob>(Blob {
            text: "after".into(),
        })
        .await
        .unwrap_err();
    assert!(error.is(ErrorCode::DriverUnavailable), "{error}");
    assert_eq!(error.class(), ErrorClass::Retryable);
    assert!(error.to_string().contains("out of memory"), "{error}");
}

#[tokio::test]
async fn an_enqueue_in_a_callers_transaction_is_refused_naming_the_outbox() {
    let driver: Arc<dyn JobDriver> = support::redis::driver("enqueue_in").await;
    let tx = driver
        .caller_transaction()
        .expect("the Redis driver answers the caller-transaction port, to refuse it");
    let mut not_a_transaction = ();
    let request = jobs::driver::EnqueueRequest {
        id: uuid::Uuid::now_v7(),
        run_id: uuid::Uuid::now_v7(),
        name: "carry_blob".into(),
        queue: "default".into(),
        input: serde_json::json!({"text": "t"}),
        idempotency_key: "t".into(),
        tenant_id: None,
        max_attempts: 1,
        run_at: chrono::Utc::now(),
        priority: 0,
        on_conflict: Default::default(),
        traceparent: None,
        actor: None,
        unique_for: None,
        dependencies: None,
        now: chrono::Utc::now(),
    };
    let error = tx
        .job_enqueue_in(&mut not_a_transaction, &request)
        .await
        .unwrap_err();
    assert!(error.is(ErrorCode::NotImplemented), "{error}");
    assert!(
        error.fix().unwrap_or_default().contains("outbox"),
        "{error:?}"
    );
    assert!(
        driver
            .job_get(&jobs::driver::JobGetParams { id: request.id })
            .await
            .unwrap()
            .is_none(),
        "nothing was written"
    );
}
