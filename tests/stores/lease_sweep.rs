//! Lapsed lease grants do not pile up on the SQL and Redis stores: a keyed rate grants a slot of
//! a new key every second (a window of 1 s, never released), and each acquire deletes a few
//! grants of other keys that lapsed more than `LEASE_SWEEP_AFTER` ago, so the stored rows stay
//! about the grants of that margin however many keys came. (The memory store's own test is in
//! `driver/memory/lease.rs`.)

use std::time::Duration;

use jobs::driver::lease::{LeaseAcquire, LeaseHoldersParams, LeaseStore, LEASE_SWEEP_AFTER};
use jobs::driver::{JobDriver, PostgresDriver, RedisDriver};
use jobs::sqlx::{self, AssertSqlSafe};

use crate::support;

/// Keys granted, one a second.
const KEYS: i64 = 600;

/// The most rows the sweep may leave: the grants of the margin, and some slack.
fn bound() -> i64 {
    LEASE_SWEEP_AFTER.as_secs() as i64 + 10
}

fn t0() -> jobs::clock::Timestamp {
    "2030-01-01T00:00:00Z".parse().expect("an RFC 3339 instant")
}

/// Grants one slot of `rate-key:sync:<n>` at `t0 + n` s for every `n` below [`KEYS`], and
/// checks the last grant is live while the first has lapsed.
async fn grant_a_key_a_second(store: &dyn LeaseStore) {
    for n in 0..KEYS {
        let granted = store
            .lease_acquire(&LeaseAcquire {
                key: format!("rate-key:sync:{n}"),
                limit: 1,
                ttl: Duration::from_secs(1),
                holder: "w1".into(),
                now: t0() + chrono::Duration::seconds(n),
            })
            .await
            .expect("acquire")
            .expect("a new key's slot is free");
        assert_eq!(granted.slot, 0);
    }
    let last = format!("rate-key:sync:{}", KEYS - 1);
    let holders = store
        .lease_holders(&LeaseHoldersParams {
            key: &last,
            now: t0() + chrono::Duration::seconds(KEYS - 1),
        })
        .await
        .expect("holders");
    assert_eq!(holders.len(), 1, "the newest grant is kept");
}

#[tokio::test]
async fn lapsed_grants_of_many_keys_do_not_pile_up_on_postgres() {
    let (pool, schema) = support::pg::schema("lease_sweep").await;
    let driver = PostgresDriver::new(pool.clone(), &schema).expect("schema");
    grant_a_key_a_second(driver.lease_store().expect("a lease store")).await;
    let rows: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "select count(*) from {schema}.x_job_leases"
    )))
    .fetch_one(&pool)
    .await
    .expect("count");
    assert!(rows <= bound(), "{rows} grants stored after {KEYS} keys");
}

#[tokio::test]
async fn lapsed_grants_of_many_keys_do_not_pile_up_on_sqlite() {
    let dir = support::sqlite::TempDir::new("lease_sweep");
    let driver = support::sqlite::driver_in(&dir).await;
    grant_a_key_a_second(driver.lease_store().expect("a lease store")).await;
    let rows: i64 = sqlx::query_scalar("select count(*) from x_job_leases")
        .fetch_one(driver.pool())
        .await
        .expect("count");
    assert!(rows <= bound(), "{rows} grants stored after {KEYS} keys");
}

#[tokio::test]
async fn lapsed_grants_of_many_keys_do_not_pile_up_on_redis() {
    let server = support::redis::shared_server();
    let prefix = support::redis::prefix("lease_sweep");
    let driver = RedisDriver::connect(&format!("{}/?prefix={prefix}", server.url()))
        .await
        .expect("the shared Redis server answers");
    grant_a_key_a_second(driver.lease_store().expect("a lease store")).await;
    let grants = server
        .cli(&["--scan", "--pattern", &format!("{{{prefix}:lease}}:l:*")])
        .lines()
        .count() as i64;
    assert!(
        grants <= bound(),
        "{grants} keys' grants stored after {KEYS} keys"
    );
    let indexed: i64 = server
        .cli(&["zcard", &format!("{{{prefix}:lease}}:exp")])
        .parse()
        .expect("a count");
    assert!(
        indexed <= bound(),
        "{indexed} keys in the expiry index after {KEYS} keys"
    );
}
