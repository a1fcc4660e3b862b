//! The outbox relay into every job store: a Postgres app's outbox feeding memory, a SQLite
//! file, Postgres (another schema) and Redis, and a SQLite app's feeding Postgres; each staged
//! job published once, with its staged ids, and run. A Redis target that goes away grows the
//! backlog and loses nothing, then drains in stage order when it is back.

use std::sync::Arc;
use std::time::Duration;

use jobs::driver::outbox::OutboxStore;
use jobs::driver::postgres::PostgresOutbox;
use jobs::driver::sqlite::SqliteOutbox;
use jobs::driver::{JobDriver, JobId, MemoryDriver, QueueStatsParams, RedisDriver};
use jobs::outbox::{OutboxMode, OutboxRelay};
use jobs::prelude::*;
use jobs::Registry;

use crate::support;
use crate::support::redis::{Persistence, RedisServer};
use crate::support::wait::until;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Order {
    id: u64,
}

#[job(name = "test.outbox.ship", key = "ship:{id}", tenant = none, queue = "outbox_ship")]
async fn outbox_ship(_run: Run, input: Order) -> Result<u64, JobError> {
    Ok(input.id)
}

fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.register::<OutboxShip>().expect("one job");
    registry
}

/// Stages `n` orders from `first` on the app's Postgres in one transaction per ten, plus one
/// rolled back; answers the staged ids in stage order.
async fn stage_pg(jobs: &Jobs, pool: &jobs::sqlx::PgPool, first: u64, n: u64) -> Vec<JobId> {
    let mut ids = Vec::new();
    for chunk in (first..first + n).collect::<Vec<_>>().chunks(10) {
        let mut tx = pool.begin().await.unwrap();
        for id in chunk {
            ids.push(
                OutboxShip::enqueue_in(jobs, &mut tx, Order { id: *id })
                    .await
                    .unwrap()
                    .id,
            );
        }
        tx.commit().await.unwrap();
    }
    let mut tx = pool.begin().await.unwrap();
    OutboxShip::enqueue_in(jobs, &mut tx, Order { id: 1_000_000 })
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    ids
}

/// Relays until the outbox is empty, in pipelined drains; answers how many rows went.
async fn drain(relay: &OutboxRelay) -> usize {
    let mut published = 0;
    loop {
        let pass = relay.drain().await.expect("drain");
        assert!(pass.stopped_by.is_none(), "a pass stopped: {pass:?}");
        if pass.claimed == 0 {
            return published;
        }
        published += pass.published;
    }
}

async fn queued(driver: &dyn JobDriver) -> u64 {
    let stats = driver
        .queue_stats(&QueueStatsParams {
            now: chrono::Utc::now(),
        })
        .await
        .unwrap();
    stats
        .iter()
        .filter(|s| s.queue == "outbox_ship")
        .map(|s| s.ready + s.delayed + s.done)
        .sum()
}

/// Publishes 25 staged jobs into `target`, checks each is there once with its staged id, and
/// runs one.
async fn feeds(target: Arc<dyn JobDriver>, outbox: Arc<dyn OutboxStore>, stage: Staging) {
    let jobs = Jobs::with_clock(target.clone(), Arc::new(jobs::clock::SystemClock))
        .with_shared_outbox(outbox.clone(), OutboxMode::Required);
    let ids = match &stage {
        Staging::Postgres(pool, _) => stage_pg(&jobs, pool, 1, 25).await,
        Staging::Sqlite(pool) => {
            let mut ids = Vec::new();
            let mut tx = pool.begin().await.unwrap();
            for id in 1..=25 {
                ids.push(
                    OutboxShip::enqueue_in(&jobs, &mut tx, Order { id })
                        .await
                        .unwrap()
                        .id,
                );
            }
            tx.commit().await.unwrap();
            ids
        }
    };
    let relay = OutboxRelay::builder_shared(outbox.clone(), &jobs)
        .batch(10)
        .build()
        .unwrap();
    assert_eq!(drain(&relay).await, 25, "target {}", target.name());
    assert_eq!(queued(&*target).await, 25, "target {}", target.name());
    for id in &ids {
        assert!(
            jobs.job(*id).await.unwrap().is_some(),
            "target {}",
            target.name()
        );
    }
    let stats = outbox.outbox_stats().await.unwrap();
    assert_eq!((stats.backlog, stats.published), (0, 25));
    // The audit trail names the relay that published each row.
    let by_relay: i64 = match &stage {
        Staging::Postgres(pool, schema) => jobs::sqlx::query_scalar(jobs::sqlx::AssertSqlSafe(
            format!("select count(*) from {schema}.x_outbox where published_by = $1"),
        ))
        .bind(relay.holder())
        .fetch_one(pool)
        .await
        .unwrap(),
        Staging::Sqlite(pool) => {
            jobs::sqlx::query_scalar("select count(*) from x_outbox where published_by = ?1")
                .bind(relay.holder())
                .fetch_one(pool)
                .await
                .unwrap()
        }
    };
    assert_eq!(by_relay, 25, "target {}", target.name());
    let worker = jobs.worker().registry(registry()).build().unwrap();
    let ran = worker.tick().await.unwrap();
    assert!(!ran.is_empty(), "a published job runs on {}", target.name());
}

enum Staging {
    /// The app's pool and the outbox's schema.
    Postgres(jobs::sqlx::PgPool, String),
    Sqlite(jobs::sqlx::SqlitePool),
}

async fn pg_outbox(test: &str) -> (Staging, Arc<dyn OutboxStore>) {
    let (pool, schema, outbox) = pg_outbox_in(test).await;
    (Staging::Postgres(pool, schema), outbox)
}

async fn pg_outbox_in(test: &str) -> (jobs::sqlx::PgPool, String, Arc<dyn OutboxStore>) {
    let (pool, schema) = support::pg::schema(test).await;
    let outbox = PostgresOutbox::new(pool.clone(), &schema).unwrap();
    (pool, schema, Arc::new(outbox))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_postgres_outbox_feeds_memory() {
    let (staging, outbox) = pg_outbox("outbox_feeds_memory").await;
    feeds(Arc::new(MemoryDriver::new()), outbox, staging).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_postgres_outbox_feeds_sqlite() {
    let (staging, outbox) = pg_outbox("outbox_feeds_sqlite").await;
    let target = support::sqlite::driver("outbox_feeds_sqlite").await;
    feeds(target, outbox, staging).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_postgres_outbox_feeds_postgres_in_another_schema() {
    let (staging, outbox) = pg_outbox("outbox_feeds_pg_app").await;
    let target = support::pg::driver("outbox_feeds_pg_jobs").await;
    feeds(target, outbox, staging).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_postgres_outbox_feeds_redis() {
    let (staging, outbox) = pg_outbox("outbox_feeds_redis").await;
    let target = support::redis::driver("outbox_feeds_redis").await;
    feeds(target, outbox, staging).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sqlite_outbox_feeds_postgres() {
    let dir = support::sqlite::TempDir::new("outbox_sqlite_app");
    let pool = support::outbox::sqlite_pool(&dir).await;
    let outbox = SqliteOutbox::new(pool.clone());
    outbox.install().await.unwrap();
    let target = support::pg::driver("outbox_sqlite_to_pg").await;
    feeds(target, Arc::new(outbox), Staging::Sqlite(pool)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_outbox_installs_in_an_app_database_without_the_jobs_tables() {
    let (pool, schema) = support::pg::schema("outbox_install_apart").await;
    let apart = format!("{schema}_app");
    let outbox = PostgresOutbox::new(pool.clone(), &apart).unwrap();
    outbox.install().await.unwrap();
    outbox.install().await.unwrap();
    let tables: Vec<String> = jobs::sqlx::query_scalar(
        "select table_name::text from information_schema.tables where table_schema = $1 \
         order by table_name",
    )
    .bind(&apart)
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(
        tables,
        vec!["x_outbox".to_string(), "x_outbox_lease".to_string()]
    );
    jobs::sqlx::raw_sql(jobs::sqlx::AssertSqlSafe(format!(
        "drop schema {apart} cascade"
    )))
    .execute(&pool)
    .await
    .unwrap();
}

/// The relay runs on the real clock while the Redis target is killed: the backlog grows, the
/// failure is counted, nothing is lost; back, it drains, in stage order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stopped_target_grows_the_backlog_and_drains_in_order_when_it_is_back() {
    let mut server = RedisServer::start("outbox_target_down", Persistence::AofAlways);
    let target: Arc<dyn JobDriver> = Arc::new(
        RedisDriver::connect(&format!("{}/?response_timeout_ms=500", server.url()))
            .await
            .unwrap(),
    );
    let (pool, schema, outbox) = pg_outbox_in("outbox_target_down").await;
    let jobs = Jobs::with_clock(target.clone(), Arc::new(jobs::clock::SystemClock))
        .with_shared_outbox(outbox.clone(), OutboxMode::Required);
    let relay = OutboxRelay::builder_shared(outbox.clone(), &jobs)
        .batch(7)
        .build()
        .unwrap()
        .start();
    let mut ids = stage_pg(&jobs, &pool, 1, 10).await;
    until(
        Duration::from_secs(30),
        "the first rows to publish",
        || async { outbox.outbox_stats().await.unwrap().backlog == 0 },
    )
    .await;

    server.kill();
    ids.extend(stage_pg(&jobs, &pool, 11, 30).await);
    until(
        Duration::from_secs(60),
        "a failed publish to be counted",
        || async { outbox.outbox_stats().await.unwrap().failing > 0 },
    )
    .await;
    let down = outbox.outbox_stats().await.unwrap();
    assert_eq!(
        down.backlog, 30,
        "the backlog holds every row staged while down"
    );
    assert!(down.last_error_code.is_some());

    server.restart();
    until(Duration::from_secs(60), "the backlog to drain", || async {
        outbox.outbox_stats().await.unwrap().backlog == 0
    })
    .await;
    assert!(relay.stop(Duration::from_secs(10)).await);
    assert_eq!(queued(&*target).await, 40, "each row published once");
    for id in &ids {
        assert!(jobs.job(*id).await.unwrap().is_some());
    }
    // In stage order: the publish times never go back along (staged_at, id).
    let table = format!("{schema}.x_outbox");
    let order: Vec<(JobId, chrono::DateTime<chrono::Utc>)> =
        jobs::sqlx::query_as(jobs::sqlx::AssertSqlSafe(format!(
            "select id, published_at from {table} order by staged_at, id"
        )))
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(order.iter().map(|(id, _)| *id).collect::<Vec<_>>(), ids);
    assert!(
        order.windows(2).all(|w| w[0].1 <= w[1].1),
        "published out of stage order"
    );
}
