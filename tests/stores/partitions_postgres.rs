//! `#[partitions]` on real Postgres: an app's table partitioned by day kept ready day after day
//! on the test clock while two writers insert into it (no insert fails, each day's run creates
//! the new partitions and drops those past `retain`, a second run the same day changes
//! nothing), `from` creating partitions back to a date and dropping none, and a DDL statement
//! meeting a held lock giving up at its `lock_timeout` with `X_DB_LOCK_TIMEOUT` and succeeding
//! on its retry. The same declaration on SQLite is refused.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::{NaiveDate, TimeDelta};
use jobs::clock::{Clock, TestClock};
use jobs::driver::JobRecord;
use jobs::driver::PostgresDriver;
use jobs::partitions::{PartitionedTable, Partitions, PartitionsReport, PartitionsRequest};
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe, PgPool};
use jobs::Worker;

use crate::support;

/// The app's tables, as the worker's context: which table, how long a DDL may wait.
struct App {
    table: String,
    lock_timeout: Duration,
}

#[partitions(name = "pg.partitions")]
fn pg_partitions(run: &Run) -> Result<Partitions, JobError> {
    let app = run.context::<App>()?;
    Ok(Partitions::new().lock_timeout(app.lock_timeout).table(
        PartitionedTable::daily(app.table.clone())
            .ahead(3)
            .retain(2),
    ))
}

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

async fn setup(test: &str, lock_timeout: Duration) -> (PgPool, String, Jobs, Worker, TestClock) {
    let (pool, schema) = support::pg::schema(test).await;
    let table = format!("{schema}.events");
    sqlx::query(AssertSqlSafe(format!(
        "create table {table} (id bigserial, at timestamptz not null, note text) \
         partition by range (at)"
    )))
    .execute(&pool)
    .await
    .unwrap();
    let clock = TestClock::at(
        chrono::DateTime::parse_from_rfc3339("2030-01-10T12:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc),
    );
    let driver = PostgresDriver::new(pool.clone(), &schema).unwrap();
    let jobs = Jobs::with_clock(Arc::new(driver), Arc::new(clock.clone()));
    let worker = jobs
        .worker()
        .context(Arc::new(App {
            table,
            lock_timeout,
        }))
        .build()
        .unwrap();
    (pool, schema, jobs, worker, clock)
}

/// The partitions of `schema.events`, by name.
async fn partitions(pool: &PgPool, schema: &str) -> Vec<String> {
    sqlx::query_scalar(
        "select c.relname::text from pg_inherits i join pg_class c on c.oid = i.inhrelid \
         where i.inhparent = to_regclass($1) order by 1",
    )
    .bind(format!("{schema}.events"))
    .fetch_all(pool)
    .await
    .unwrap()
}

/// Enqueues a run and works until it settles; answers the job.
async fn run(jobs: &Jobs, worker: &Worker, request: PartitionsRequest) -> JobRecord {
    let queued = PgPartitions::enqueue(jobs, request).await.unwrap();
    for _ in 0..20 {
        let job = jobs.job(queued.id).await.unwrap().unwrap();
        if settled(job.state) {
            return job;
        }
        worker.tick().await.unwrap();
    }
    jobs.job(queued.id).await.unwrap().unwrap()
}

fn settled(state: JobState) -> bool {
    matches!(
        state,
        JobState::Done | JobState::Dead | JobState::Failed | JobState::Cancelled
    )
}

fn report(job: &JobRecord) -> PartitionsReport {
    serde_json::from_value(job.result.clone().expect("the run's report")).unwrap()
}

fn expected(from: &str, days: i64) -> Vec<String> {
    (0..days)
        .map(|n| {
            format!(
                "events_p{}",
                (day(from) + TimeDelta::days(n)).format("%Y%m%d")
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keeps_a_daily_table_ready_under_concurrent_writes() {
    let (pool, schema, jobs, worker, clock) =
        setup("partitions_ready", Duration::from_secs(5)).await;

    let first = run(&jobs, &worker, PartitionsRequest::default()).await;
    assert_eq!(first.state, JobState::Done, "{:?}", first.last_error);
    // The current day and three ahead.
    assert_eq!(partitions(&pool, &schema).await, expected("2030-01-10", 4));

    // Two writers insert into "today" (the test clock's) while the days pass and each day's
    // run creates and drops partitions.
    let stop = Arc::new(AtomicBool::new(false));
    let inserted = Arc::new(AtomicU64::new(0));
    let mut writers = Vec::new();
    for w in 0..2 {
        let (pool, stop, inserted, clock) =
            (pool.clone(), stop.clone(), inserted.clone(), clock.clone());
        let table = format!("{schema}.events");
        writers.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                sqlx::query(AssertSqlSafe(format!(
                    "insert into {table} (at, note) values ($1, $2)"
                )))
                .bind(clock.now())
                .bind(format!("writer {w}"))
                .execute(&pool)
                .await
                .expect("no insert fails while partitions come and go");
                inserted.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    for n in 1..=4 {
        clock.advance(Duration::from_secs(86_400));
        let job = run(&jobs, &worker, PartitionsRequest::default()).await;
        assert_eq!(job.state, JobState::Done, "day {n}: {:?}", job.last_error);
        let today = day("2030-01-10") + TimeDelta::days(n);
        let done = report(&job);
        assert_eq!(done.tables.len(), 1);
        assert_eq!(
            done.tables[0].created,
            expected(
                &(today + TimeDelta::days(3)).format("%Y-%m-%d").to_string(),
                1
            ),
            "day {n}: one new partition at the far end"
        );
        // Kept: today and the two before it (those made since the first run).
        let oldest = (today - TimeDelta::days(2)).max(day("2030-01-10"));
        let kept = (today + TimeDelta::days(3) - oldest).num_days() + 1;
        assert_eq!(
            partitions(&pool, &schema).await,
            expected(&oldest.format("%Y-%m-%d").to_string(), kept),
            "day {n}"
        );
        if n >= 3 {
            assert_eq!(done.tables[0].dropped.len(), 1, "day {n}: one dropped");
        }
    }
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.await.unwrap();
    }
    assert!(inserted.load(Ordering::SeqCst) > 0);

    // Idempotent: a second run the same day changes nothing.
    let again = run(&jobs, &worker, PartitionsRequest::default()).await;
    let again = report(&again);
    assert!(again.tables[0].created.is_empty() && again.tables[0].dropped.is_empty());

    // `from`: back to a date, dropping nothing (even what `retain` would).
    let before = partitions(&pool, &schema).await;
    let back = run(&jobs, &worker, PartitionsRequest::from(day("2030-01-05"))).await;
    assert_eq!(back.state, JobState::Done, "{:?}", back.last_error);
    let after = partitions(&pool, &schema).await;
    assert_eq!(after, expected("2030-01-05", 13));
    assert!(before.iter().all(|p| after.contains(p)), "nothing dropped");
    // A row of that old day has a home now.
    sqlx::query(AssertSqlSafe(format!(
        "insert into {schema}.events (at, note) values ('2030-01-05 23:59:59+00', 'late')"
    )))
    .execute(&pool)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_times_the_ddl_out_and_the_retry_succeeds() {
    let (pool, schema, jobs, worker, clock) =
        setup("partitions_lock", Duration::from_millis(200)).await;
    // A long reader holds the table: creating a partition must wait for it.
    let mut reader = pool.begin().await.unwrap();
    sqlx::query(AssertSqlSafe(format!(
        "lock table {schema}.events in access share mode"
    )))
    .execute(&mut *reader)
    .await
    .unwrap();

    let queued = PgPartitions::enqueue(&jobs, PartitionsRequest::default())
        .await
        .unwrap();
    worker.tick().await.unwrap();
    let job = jobs.job(queued.id).await.unwrap().unwrap();
    assert_eq!(job.last_error_code.as_deref(), Some("X_DB_LOCK_TIMEOUT"));
    assert!(!settled(job.state), "retryable: {:?}", job.state);
    assert!(partitions(&pool, &schema).await.is_empty());

    reader.rollback().await.unwrap();
    for _ in 0..10 {
        clock.advance(Duration::from_secs(3_600));
        worker.tick().await.unwrap();
        if settled(jobs.job(queued.id).await.unwrap().unwrap().state) {
            break;
        }
    }
    let job = jobs.job(queued.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Done, "{:?}", job.last_error);
    assert_eq!(job.attempt, 2);
    assert_eq!(partitions(&pool, &schema).await.len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_without_partitions_refuses_the_run() {
    let driver = support::sqlite::driver("partitions_sqlite").await;
    let jobs = Jobs::with_clock(driver, Arc::new(TestClock::new()));
    let worker = jobs
        .worker()
        .context(Arc::new(App {
            table: "events".into(),
            lock_timeout: Duration::from_secs(1),
        }))
        .build()
        .unwrap();
    let job = run(&jobs, &worker, PartitionsRequest::default()).await;
    assert_eq!(job.state, JobState::Dead);
    assert_eq!(
        job.last_error_code.as_deref(),
        Some("X_JOB_DECLARATION_INVALID")
    );
    assert!(job
        .last_error
        .unwrap_or_default()
        .contains("no declarative partitions"));
}
