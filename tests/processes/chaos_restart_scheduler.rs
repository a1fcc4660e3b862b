//! A Postgres restart under a leading scheduler: its rounds fail while the server is down, and
//! once it is back the scheduler reconnects on its own, leads again, and fires every
//! occurrence it owes exactly once (the watermark and the occurrence keys hold).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use jobs::clock::TestClock;
use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};
use support::pg;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Beat {
    at_ms: i64,
}

#[job(key = "beat:{at_ms}", tenant = none)]
async fn heartbeat_job(_run: Run, _input: Beat) -> Result<(), JobError> {
    Ok(())
}

#[task(cron = "* * * * *", tz = "UTC")]
fn every_minute(at: Occurrence) -> Vec<Entry> {
    vec![Entry::of::<HeartbeatJob>(Beat {
        at_ms: at.timestamp_millis(),
    })]
}

async fn fired_jobs(pool: &sqlx::PgPool, schema: &str) -> i64 {
    let sql = format!("select count(*) from {schema}.x_jobs where name = 'heartbeat_job'");
    sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(pool)
        .await
        .expect("count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheduler_reconnects_after_a_restart_and_fires_each_occurrence_once() {
    // A restart needs a server of the test's own: no private cluster is a failure that names
    // the fix, never a skip.
    let cluster = pg::private_cluster().unwrap_or_else(|why| panic!("{why}"));
    let url = cluster.url();
    let (pool, schema) = pg::schema_on(&url, "restart_scheduler").await;
    // 2030-01-01T00:00:30Z: half a minute before the first occurrence.
    let clock = TestClock::new();
    clock.advance(Duration::from_secs(30));
    let driver = PostgresDriver::new(pool.clone(), &schema).expect("schema");
    let jobs = Jobs::with_clock(Arc::new(driver), Arc::new(clock.clone()));
    let scheduler = jobs.scheduler().build().expect("scheduler");

    // Leads, arms the task, then fires the 00:01 occurrence.
    assert!(scheduler.tick().await.expect("first round").leading);
    clock.advance(Duration::from_secs(60));
    let round = scheduler.tick().await.expect("round");
    assert_eq!(round.fired.len(), 1);
    assert_eq!(fired_jobs(&pool, &schema).await, 1);

    // The server goes away for a while; two occurrences pass meanwhile.
    cluster.stop().expect("stop the server");
    clock.advance(Duration::from_secs(60));
    // A round while it is down fails on the store (or answers from the lease it holds in
    // memory); either way nothing is fired.
    let _ = scheduler.tick().await;
    clock.advance(Duration::from_secs(60));
    cluster.start().expect("start the server");

    // Back: the next rounds reconnect through the pool, lead again, and catch up (skip: the
    // latest missed occurrence) exactly once.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut fired = 0;
    loop {
        if let Ok(round) = scheduler.tick().await {
            fired += round.fired.len();
            if round.leading && fired > 0 {
                break;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the scheduler never came back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(fired, 1, "skip fires only the latest missed occurrence");
    assert_eq!(fired_jobs(&pool, &schema).await, 2);
    // A further round fires nothing twice.
    assert!(scheduler.tick().await.expect("round").fired.is_empty());
    assert_eq!(fired_jobs(&pool, &schema).await, 2);
    println!("scheduler reconnected after a restart; fired 1 + 1 occurrences, none twice");
}
