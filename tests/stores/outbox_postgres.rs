//! The outbox cases on Postgres, each in a schema of its own; and one race only Postgres has,
//! where a claim reads the outbox in one snapshot and takes the lease after waiting for its lock.

use std::time::Duration;

use jobs::conformance::outbox::OutboxFixture;
use jobs::driver::outbox::{OutboxClaimParams, OutboxPublished, OutboxSettle};
use jobs::driver::*;
use jobs::sqlx::AssertSqlSafe;

use crate::support;

jobs::outbox_suite!(|case| support::outbox::postgres(case));

type Ts = chrono::DateTime<chrono::Utc>;

fn at(s: i64) -> Ts {
    chrono::DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc)
        + chrono::Duration::seconds(s)
}

fn staged(key: &str) -> EnqueueRequest {
    support::request::request("outbox.race", "default", key, at(0), at(0))
}

fn claim(holder: &str, now: Ts) -> OutboxClaimParams {
    OutboxClaimParams {
        holder: holder.into(),
        limit: 10,
        lease: Duration::from_secs(30),
        now,
        after: None,
    }
}

/// How many statements wait, directly or behind another waiter, for the lock that backend
/// `holder` holds.
async fn waiting_behind(pool: &jobs::sqlx::PgPool, holder: i32) -> i64 {
    jobs::sqlx::query_scalar(
        "select count(*) from pg_stat_activity w \
         where w.wait_event_type = 'Lock' \
           and ($1 = any(pg_blocking_pids(w.pid)) \
                or exists (select 1 from pg_stat_activity v \
                           where v.pid = any(pg_blocking_pids(w.pid)) \
                             and $1 = any(pg_blocking_pids(v.pid))))",
    )
    .bind(holder)
    .fetch_one(pool)
    .await
    .expect("pg_stat_activity")
}

/// A relay whose lease lapsed marks its batch while another relay's claim, which read the
/// outbox before that mark, waits for the lease row's lock (held here by a third connection,
/// so the two meet every time). Whichever gets the lock first, the rows are recorded once:
/// either the mark lands and the claim takes nothing (it sees the lease written since its
/// snapshot), or the claim takes the lease over and the late mark changes nothing. Before the
/// mark wrote the lease row, both happened: the claim answered the rows the mark had recorded,
/// and the other relay published them again.
#[tokio::test]
async fn a_late_mark_and_a_takeover_from_an_older_snapshot_never_both_land() {
    let (fixture, schema) =
        support::outbox::postgres_in_schema("outbox_late_mark_and_takeover").await;
    fixture
        .stage(&[staged("a"), staged("b")], true)
        .await
        .expect("stage");
    let store = fixture.store();
    let held = store
        .outbox_claim(&claim("r1", at(10)))
        .await
        .expect("claim");
    assert_eq!(held.len(), 2);

    let mut lock = fixture.pool.begin().await.expect("begin");
    jobs::sqlx::query(AssertSqlSafe(format!(
        "select 1 from {schema}.x_outbox_lease where id = 1 for update"
    )))
    .execute(&mut *lock)
    .await
    .expect("lock the lease row");
    let holder: i32 = jobs::sqlx::query_scalar("select pg_backend_pid()")
        .fetch_one(&mut *lock)
        .await
        .expect("the lock holder's pid");

    // r1's claim lapsed at 40 s: r2 reads the outbox, then waits for the lease row.
    let takeover = tokio::spawn({
        let store = store.clone();
        async move { store.outbox_claim(&claim("r2", at(50))).await }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while waiting_behind(&fixture.pool, holder).await < 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the takeover never waited"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // r1 marks its batch late: it either lands at once or waits behind the takeover.
    let mark = tokio::spawn({
        let store = store.clone();
        let rows: Vec<OutboxPublished> = held
            .iter()
            .map(|r| OutboxPublished {
                id: r.request.id,
                deduped: false,
            })
            .collect();
        async move {
            let settle = OutboxSettle {
                holder: "r1",
                now: at(51),
            };
            store.outbox_published(&settle, &rows).await
        }
    });
    while !mark.is_finished() && waiting_behind(&fixture.pool, holder).await < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the mark neither landed nor waited"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    lock.commit().await.expect("release the lease row");

    let taken = takeover.await.expect("join").expect("the takeover's claim");
    let marked = mark.await.expect("join").expect("the late mark");
    assert!(
        (marked, taken.len()) == (2, 0) || (marked, taken.len()) == (0, 2),
        "the late mark recorded {marked} rows and the takeover answered {} of them",
        taken.len()
    );
}
