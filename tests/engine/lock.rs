//! `with_lock`: one holder fleet-wide, fencing tokens, renewal, loss and refusals — on the memory
//! driver with a frozen clock, and on Postgres with two clients.

use crate::support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jobs::clock::TestClock;
use jobs::driver::lease::LeaseHoldersParams;
use jobs::driver::{MemoryDriver, PostgresDriver};
use jobs::prelude::*;
use jobs::LockOptions;

const TTL: Duration = Duration::from_secs(30);

fn frozen() -> (Jobs, TestClock) {
    let clock = TestClock::new();
    let jobs = Jobs::with_clock(Arc::new(MemoryDriver::new()), Arc::new(clock.clone()));
    (jobs, clock)
}

/// Lets spawned tasks run until they park on the frozen clock.
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn tokens_increase_across_holders() {
    let (jobs, _clock) = frozen();
    let mut tokens = Vec::new();
    for _ in 0..3 {
        let token = jobs
            .with_lock(
                "report",
                LockOptions::ttl(TTL),
                |g| async move { Ok(g.token()) },
            )
            .await
            .unwrap();
        tokens.push(token);
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

#[tokio::test]
async fn a_held_lock_refuses_after_the_wait_naming_the_holder() {
    let (jobs, clock) = frozen();
    let release = Arc::new(tokio::sync::Notify::new());
    let holder = {
        let (jobs, release) = (jobs.clone(), release.clone());
        tokio::spawn(async move {
            jobs.with_lock("report", LockOptions::ttl(TTL), |_g| async move {
                release.notified().await;
                Ok(())
            })
            .await
        })
    };
    settle().await;
    // A single try while it is held.
    let once = jobs
        .with_lock(
            "report",
            LockOptions::ttl(TTL).wait(Duration::ZERO),
            |_g| async { Ok(()) },
        )
        .await
        .unwrap_err();
    assert_eq!(once.code(), Some(ErrorCode::LockNotAcquired));
    // A waiting try gives up once its wait has passed on the clock.
    let waiter = {
        let jobs = jobs.clone();
        tokio::spawn(async move {
            jobs.with_lock(
                "report",
                LockOptions::ttl(TTL).wait(Duration::from_secs(5)),
                |_g| async { Ok(()) },
            )
            .await
        })
    };
    settle().await;
    clock.advance(Duration::from_secs(5));
    settle().await;
    let refused = waiter.await.unwrap().unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::LockNotAcquired));
    assert!(
        refused.message().contains("held by"),
        "{}",
        refused.message()
    );
    release.notify_one();
    holder.await.unwrap().unwrap();
    // Free again.
    jobs.with_lock(
        "report",
        LockOptions::ttl(TTL).wait(Duration::ZERO),
        |_g| async { Ok(()) },
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_waiting_caller_gets_the_lock_when_the_holder_leaves() {
    let (jobs, clock) = frozen();
    let release = Arc::new(tokio::sync::Notify::new());
    let holder = {
        let (jobs, release) = (jobs.clone(), release.clone());
        tokio::spawn(async move {
            jobs.with_lock("report", LockOptions::ttl(TTL), |g| async move {
                release.notified().await;
                Ok(g.token())
            })
            .await
        })
    };
    settle().await;
    let waiter = {
        let jobs = jobs.clone();
        tokio::spawn(async move {
            jobs.with_lock(
                "report",
                LockOptions::ttl(TTL),
                |g| async move { Ok(g.token()) },
            )
            .await
        })
    };
    settle().await;
    release.notify_one();
    let first = holder.await.unwrap().unwrap();
    clock.advance(Duration::from_secs(1));
    settle().await;
    let second = waiter.await.unwrap().unwrap();
    assert!(second > first);
}

#[tokio::test]
async fn a_refused_renewal_loses_the_lock_fires_the_guard_and_fails_the_call() {
    let (jobs, clock) = frozen();
    let (hand_out, handed) = tokio::sync::oneshot::channel();
    let call = {
        let jobs = jobs.clone();
        tokio::spawn(async move {
            jobs.with_lock("report", LockOptions::ttl(TTL), |guard| async move {
                // The work hands a copy of its guard to a writer beside it; the work itself is
                // dropped once the lock is lost.
                let _ = hand_out.send(guard.clone());
                std::future::pending::<Result<(), JobError>>().await
            })
            .await
        })
    };
    let guard: jobs::LockGuard = support::wait::bounded("the work to start", handed)
        .await
        .expect("the work started and handed out its guard");
    // The writer stops when the guard fires; it counts how often it was told.
    let saw_lost = Arc::new(AtomicU32::new(0));
    let writer = {
        let (guard, saw_lost) = (guard.clone(), saw_lost.clone());
        tokio::spawn(async move {
            guard.lost().await;
            saw_lost.fetch_add(1, Ordering::SeqCst);
        })
    };
    settle().await;
    clock.advance(TTL / 3);
    settle().await;
    assert!(!guard.is_lost(), "renewed, still held");
    assert_eq!(saw_lost.load(Ordering::SeqCst), 0);
    // Someone takes the key from under the holder (an operator, a lapsed clock elsewhere).
    let store = jobs.driver().lease_store().unwrap();
    let held = store
        .lease_holders(&LeaseHoldersParams {
            key: "lock:report",
            now: jobs.now(),
        })
        .await
        .unwrap();
    assert_eq!(held.len(), 1, "renewed at a third of the ttl");
    assert!(store.lease_release(&held[0]).await.unwrap());
    clock.advance(TTL / 3);
    settle().await;
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::LockLost));
    assert!(guard.is_lost(), "the refused renewal fired the guard");
    support::wait::bounded("the writer to see the loss", writer)
        .await
        .unwrap();
    assert_eq!(
        saw_lost.load(Ordering::SeqCst),
        1,
        "the writer saw the loss exactly once"
    );
}

#[tokio::test]
async fn no_lease_store_is_refused_with_a_fix() {
    let jobs = Jobs::new(MemoryDriver::without_lease_store());
    let error = jobs
        .with_lock("report", LockOptions::ttl(TTL), |_g| async { Ok(()) })
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(ErrorCode::LockStoreMissing));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_postgres_two_clients_never_hold_one_lock_at_once() {
    let (pool, schema) = support::pg::schema("lock_two_clients").await;
    // A second pool: another client, as another process would be.
    let second_pool = jobs::conformance::sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect(support::pg::database_url())
        .await
        .unwrap();
    let clients = [
        Jobs::new(PostgresDriver::new(pool, &schema).unwrap()),
        Jobs::new(PostgresDriver::new(second_pool, &schema).unwrap()),
    ];
    let inside = Arc::new(AtomicU32::new(0));
    let tokens = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut calls = Vec::new();
    for i in 0..10 {
        let jobs = clients[i % 2].clone();
        let (inside, tokens) = (inside.clone(), tokens.clone());
        calls.push(tokio::spawn(async move {
            jobs.with_lock("report", LockOptions::ttl(TTL), |guard| async move {
                assert_eq!(
                    inside.fetch_add(1, Ordering::SeqCst),
                    0,
                    "two holders at once"
                );
                tokio::task::yield_now().await;
                tokens.lock().unwrap().push(guard.token());
                inside.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            })
            .await
        }));
    }
    for call in calls {
        call.await.unwrap().unwrap();
    }
    let tokens = tokens.lock().unwrap().clone();
    assert_eq!(tokens.len(), 10);
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "in grant order: {tokens:?}"
    );
}
