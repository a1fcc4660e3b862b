//! An outbox relay process SIGKILLed between publishing a batch and marking it: its lease
//! holds the head until it lapses, then another relay takes the head over, re-publishes the
//! batch (the job store answers the first jobs by id: no second job) and publishes the rest,
//! every row once, in stage order.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use jobs::clock::{SystemClock, TestClock};
use jobs::driver::outbox::OutboxStore;
use jobs::driver::postgres::PostgresOutbox;
use jobs::driver::{JobDriver, JobId, PostgresDriver, QueueStatsParams};
use jobs::outbox::{OutboxMode, OutboxRelay, DEFAULT_OUTBOX_CLAIM_LEASE};
use jobs::prelude::*;

use crate::support;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Parcel {
    n: u64,
}

#[job(name = "test.outbox.parcel", key = "parcel:{n}", tenant = none, queue = "outbox_parcel")]
async fn outbox_parcel(_run: Run, _input: Parcel) -> Result<(), JobError> {
    Ok(())
}

async fn jobs_in(driver: &dyn JobDriver) -> u64 {
    driver
        .queue_stats(&QueueStatsParams {
            now: chrono::Utc::now(),
        })
        .await
        .unwrap()
        .iter()
        .map(|s| s.ready + s.delayed)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_relay_killed_between_publish_and_mark_is_taken_over_and_every_row_publishes_once() {
    let (pool, app) = support::pg::schema("outbox_kill_app").await;
    let (_, target_schema) = support::pg::schema("outbox_kill_jobs").await;
    let outbox = PostgresOutbox::new(pool.clone(), &app).unwrap();
    let target: Arc<dyn JobDriver> =
        Arc::new(PostgresDriver::new(pool.clone(), &target_schema).unwrap());
    let jobs = Jobs::with_clock(target.clone(), Arc::new(SystemClock))
        .with_outbox(outbox.clone(), OutboxMode::Required);
    let mut ids: Vec<JobId> = Vec::new();
    for chunk in (0..50).collect::<Vec<u64>>().chunks(10) {
        let mut tx = pool.begin().await.unwrap();
        for n in chunk {
            ids.push(
                OutboxParcel::enqueue_in(&jobs, &mut tx, Parcel { n: *n })
                    .await
                    .unwrap()
                    .id,
            );
        }
        tx.commit().await.unwrap();
    }

    let url = support::pg::database_url();
    let mut relay = Command::new(env!("CARGO_BIN_EXE_outbox-relay"))
        .env("DATABASE_URL", url)
        .env("OUTBOX_SCHEMA", &app)
        .env("TARGET_URL", url)
        .env("TARGET_SCHEMA", &target_schema)
        .env("BATCH", "10")
        .env("HOLDER", "relay-killed")
        .env("STALL_ON_MARK", "3")
        .stdout(Stdio::piped())
        .spawn()
        .expect("the relay process starts");
    let stdout = relay.stdout.take().expect("piped stdout");
    // The process says `ready`, then `stalled` once it published its third batch; a process
    // that dies closes the pipe, so the read ends either way.
    let lines = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || {
            std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .take(2)
                .collect::<Vec<_>>()
        }),
    )
    .await
    .expect("the relay stalls within 120 s")
    .unwrap();
    assert_eq!(lines, vec!["ready".to_string(), "stalled".to_string()]);
    relay.kill().expect("SIGKILL");
    relay.wait().unwrap();

    let after_kill = outbox.outbox_stats().await.unwrap();
    assert_eq!((after_kill.published, after_kill.backlog), (20, 30));
    // The third batch reached the job store; the relay pipelines, so the fourth may have too
    // (it is published while the third is marked), never more.
    let reached = jobs_in(&*target).await;
    assert!(
        reached == 30 || reached == 40,
        "the third batch, and at most the fourth, reached the job store: {reached}"
    );

    // Its lease holds the head until it lapses: no other relay takes anything before.
    let now_relay = OutboxRelay::builder(outbox.clone(), &jobs)
        .holder("relay-takeover")
        .batch(10)
        .build()
        .unwrap();
    assert_eq!(now_relay.pass().await.unwrap().claimed, 0);

    let lapsed = Arc::new(TestClock::at(
        chrono::Utc::now()
            + chrono::Duration::from_std(DEFAULT_OUTBOX_CLAIM_LEASE).unwrap()
            + chrono::Duration::seconds(1),
    ));
    let later = Jobs::with_clock(target.clone(), lapsed);
    let takeover = OutboxRelay::builder(outbox.clone(), &later)
        .holder("relay-takeover")
        .batch(10)
        .build()
        .unwrap();
    let (mut published, mut deduped) = (0, 0);
    loop {
        let pass = takeover.pass().await.unwrap();
        if pass.claimed == 0 {
            break;
        }
        published += pass.published;
        deduped += pass.deduped;
    }
    assert_eq!(
        (published, deduped),
        (30, reached as usize - 20),
        "the batches published before the kill met their first jobs"
    );
    assert_eq!(
        jobs_in(&*target).await,
        50,
        "every row once at the job store"
    );
    for id in &ids {
        assert!(later.job(*id).await.unwrap().is_some());
    }
    let order: Vec<(JobId, chrono::DateTime<chrono::Utc>, String)> =
        jobs::sqlx::query_as(jobs::sqlx::AssertSqlSafe(format!(
            "select id, published_at, published_by from {app}.x_outbox order by staged_at, id"
        )))
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(order.iter().map(|r| r.0).collect::<Vec<_>>(), ids);
    assert!(
        order.windows(2).all(|w| w[0].1 <= w[1].1),
        "published out of stage order"
    );
    let by_takeover = order.iter().filter(|r| r.2 == "relay-takeover").count();
    assert_eq!(by_takeover, 30);
    let stats = outbox.outbox_stats().await.unwrap();
    assert_eq!((stats.backlog, stats.published), (0, 50));
}
