//! `#[consumer]` over real sources: a Postgres table read by keyset while writers insert into
//! it, its laps run by a worker on a Postgres store and kept going by the supervisor task
//! (every row handled once, in order of its id, across laps); and a NATS JetStream stream read
//! by sequence on the test's own `nats-server` (every message once, in order).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobs::clock::TestClock;
use jobs::consumer::{ConsumerLap, ConsumerReport};
use jobs::driver::PostgresDriver;
use jobs::fire_now;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe, PgPool};
use jobs::testing::TestKit;

use crate::support;

// --- A Postgres table, by keyset -----------------------------------------------------------

struct Shop {
    pool: PgPool,
    schema: String,
}

#[derive(Debug)]
struct Order {
    id: i64,
}

async fn orders_after(
    pass: Pass,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<Order, i64>, JobError> {
    let shop = pass.context::<Shop>()?;
    let ids: Vec<i64> = sqlx::query_scalar(AssertSqlSafe(format!(
        "select id from {}.orders where id > $1 order by id limit $2",
        shop.schema
    )))
    .bind(after.unwrap_or(0))
    .bind(i64::from(limit))
    .fetch_all(&shop.pool)
    .await
    .map_err(|e| JobError::retryable(format!("reading orders: {e}")))?;
    Ok(Page::keyed(
        ids.into_iter().map(|id| Order { id }).collect(),
        |o| o.id,
    ))
}

#[consumer(name = "pg.orders", source = orders_after, batch = 40, lap = 4, poll = "1s")]
async fn copy_orders(pass: Pass, orders: Vec<Order>) -> Result<(), JobError> {
    let shop = pass.context::<Shop>()?;
    let ids: Vec<i64> = orders.iter().map(|o| o.id).collect();
    // `handled` counts deliveries, so the test sees a row handled twice.
    sqlx::query(AssertSqlSafe(format!(
        "insert into {0}.copied (id, handled) select unnest($1::bigint[]), 1 \
         on conflict (id) do update set handled = {0}.copied.handled + 1",
        shop.schema
    )))
    .bind(&ids)
    .execute(&shop.pool)
    .await
    .map_err(|e| JobError::retryable(format!("copying orders: {e}")))?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_table_by_keyset_under_writes() {
    let (pool, schema) = support::pg::schema("consumer_pg").await;
    for ddl in [
        format!("create table {schema}.orders (id bigserial primary key, note text)"),
        format!("create table {schema}.copied (id bigint primary key, handled int not null)"),
    ] {
        sqlx::query(AssertSqlSafe(ddl))
            .execute(&pool)
            .await
            .unwrap();
    }
    let clock = TestClock::new();
    let driver = PostgresDriver::new(pool.clone(), &schema).unwrap();
    let jobs = Jobs::with_clock(Arc::new(driver), Arc::new(clock.clone()));
    let worker = jobs
        .worker()
        .context(Arc::new(Shop {
            pool: pool.clone(),
            schema: schema.clone(),
        }))
        .build()
        .unwrap();

    // A writer inserts 600 orders in bursts while the supervisor fires and laps run.
    let writer = {
        let (pool, schema) = (pool.clone(), schema.clone());
        tokio::spawn(async move {
            for _ in 0..30 {
                sqlx::query(AssertSqlSafe(format!(
                    "insert into {schema}.orders (note) select 'o' from generate_series(1, 20)"
                )))
                .execute(&pool)
                .await
                .unwrap();
                tokio::task::yield_now().await;
            }
        })
    };
    let mut laps = std::collections::BTreeSet::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        // The supervisor's fire: a new lap, or the live one (deduped).
        for queued in fire_now::<CopyOrdersSupervisor>(&jobs).await.unwrap() {
            laps.insert(queued.id);
        }
        worker.tick().await.unwrap();
        clock.advance(Duration::from_secs(1));
        let copied: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
            "select count(*) from {schema}.copied"
        )))
        .fetch_one(&pool)
        .await
        .unwrap();
        if writer.is_finished() && copied == 600 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "every order copied within two minutes (copied {copied})"
        );
    }
    writer.await.unwrap();
    let twice: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "select count(*) from {schema}.copied where handled <> 1"
    )))
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(twice, 0, "no order handled twice");
    assert!(
        laps.len() >= 2,
        "several laps, each starting where the last stopped: {laps:?}"
    );
}

// --- A NATS JetStream stream, by sequence ---------------------------------------------------

struct Events {
    stream: async_nats::jetstream::stream::Stream,
    seen: Mutex<Vec<String>>,
}

#[derive(Debug)]
struct Event {
    sequence: u64,
    payload: String,
}

/// The messages after sequence `after`, at most `limit`: the stream's sequences are its keyset.
async fn events_after(
    pass: Pass,
    after: Option<u64>,
    limit: u32,
) -> Result<Page<Event, u64>, JobError> {
    let events = pass.context::<Events>()?;
    let info = events
        .stream
        .get_info()
        .await
        .map_err(|e| JobError::retryable(format!("reading the stream's state: {e}")))?;
    let last = info.state.last_sequence;
    let mut page = Vec::new();
    let mut sequence = after.unwrap_or(0) + 1;
    while sequence <= last && page.len() < limit as usize {
        let message = events
            .stream
            .get_raw_message(sequence)
            .await
            .map_err(|e| JobError::retryable(format!("reading message {sequence}: {e}")))?;
        page.push(Event {
            sequence: message.sequence,
            payload: String::from_utf8_lossy(&message.payload).into_owned(),
        });
        sequence += 1;
    }
    Ok(Page::keyed(page, |e| e.sequence))
}

#[consumer(name = "nats.events", source = events_after, batch = 25, lap = 3, poll = "2s")]
async fn record_events(pass: Pass, events: Vec<Event>) -> Result<(), JobError> {
    let sink = pass.context::<Events>()?;
    sink.seen
        .lock()
        .unwrap()
        .extend(events.into_iter().map(|e| e.payload));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nats_jetstream_stream_by_sequence() {
    let server = support::nats::NatsServer::start("consumer_nats");
    let client = async_nats::connect(server.url()).await.unwrap();
    let js = async_nats::jetstream::new(client);
    let stream = js
        .create_stream(async_nats::jetstream::stream::Config {
            name: "EVENTS".into(),
            subjects: vec!["events.>".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    let publish = |from: u32, to: u32| {
        let js = js.clone();
        async move {
            for n in from..=to {
                js.publish(format!("events.{}", n % 3), format!("event-{n}").into())
                    .await
                    .unwrap()
                    .await
                    .unwrap();
            }
        }
    };
    publish(1, 60).await;
    let events = Arc::new(Events {
        stream,
        seen: Mutex::new(Vec::new()),
    });
    let kit = TestKit::with_worker(|w| w.context(events.clone()));

    // A lap of three pages (25, 25, 10) stops at its limit; the next, due at once, finds
    // nothing new; the one after waits `poll`, then reads what was published meanwhile.
    let lap = kit.enqueue::<RecordEvents>(ConsumerLap::default()).await;
    kit.run_until_idle().await;
    let first = kit.job(lap.id).await;
    assert_eq!(first.state, JobState::Done, "{:?}", first.last_error);
    let first: ConsumerReport = serde_json::from_value(first.result.unwrap()).unwrap();
    assert_eq!(
        (first.rows, first.cursor),
        (60, Some(serde_json::json!(60)))
    );

    publish(61, 80).await;
    kit.advance(Duration::from_secs(2));
    kit.run_until_idle().await;
    let seen = events.seen.lock().unwrap().clone();
    let expected: Vec<String> = (1..=80).map(|n| format!("event-{n}")).collect();
    assert_eq!(seen, expected, "every message once, in order");
}
