//! Postgres: the hot path's own connections and statements. The enqueue, claim and ack paths
//! keep a pinned connection out of the pool; a pinned connection that dies is replaced under
//! the call that meets it, and a second caller never waits on the pin. The single enqueue's plain INSERT
//! turns a key taken under it into a dedupe, not an error. The worker's registry write never
//! stands in front of a claim. The batched ack, and every statement that changes one running row
//! under its claim, finds its rows by id.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use jobs::driver::{JobDriver, PostgresDriver};
use jobs::prelude::*;
use jobs::sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use jobs::sqlx::{self, AssertSqlSafe};
use support::pg;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Beat {
    n: u64,
}

#[job(key = "ping:{n}", tenant = none)]
async fn ping(_run: Run, _input: Beat) -> Result<(), JobError> {
    Ok(())
}

/// A driver over `schema` whose sessions carry `marker` as their application name, so this
/// test can find (and kill) its own backends without touching other tests'.
async fn marked_driver(schema: &str, marker: &str) -> PostgresDriver {
    let options: PgConnectOptions = pg::database_url().parse().expect("url");
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect_with(PostgresDriver::tune(options).application_name(marker))
        .await
        .expect("connect");
    PostgresDriver::new(pool, schema).expect("schema")
}

async fn kill_backends(pool: &sqlx::PgPool, marker: &str) -> i64 {
    sqlx::query_scalar(
        "select count(*) from (
             select pg_terminate_backend(pid) from pg_stat_activity
             where application_name = $1 and pid <> pg_backend_pid()
         ) killed",
    )
    .bind(marker)
    .fetch_one(pool)
    .await
    .expect("terminate")
}

#[tokio::test]
async fn a_pinned_connection_that_dies_is_replaced_under_the_call() {
    let (admin, schema) = pg::schema("hot_path_pin_dies").await;
    let marker = format!("jobs-test-{schema}");
    let jobs = Jobs::new(marked_driver(&schema, &marker).await);
    Ping::enqueue(&jobs, Beat { n: 1 }).await.expect("first");
    assert!(
        kill_backends(&admin, &marker).await >= 1,
        "the pinned backend was found"
    );

    // The call that meets the dead connection goes once more on a fresh one: the caller never
    // sees the restart, and the job is new (not a dedupe of its own first try).
    let met = Ping::enqueue(&jobs, Beat { n: 2 })
        .await
        .expect("the dead pin is replaced under the call");
    assert!(!met.deduped);
    let after = Ping::enqueue(&jobs, Beat { n: 3 })
        .await
        .expect("re-dialled");
    assert!(!after.deduped);
    let again = Ping::enqueue(&jobs, Beat { n: 3 }).await.expect("dedupe");
    assert!(again.deduped && again.id == after.id);
}

#[tokio::test]
async fn concurrent_callers_never_wait_on_the_pin() {
    let (admin, schema) = pg::schema("hot_path_pin_shared").await;
    let marker = format!("jobs-test-{schema}");
    let jobs = Jobs::new(marked_driver(&schema, &marker).await);
    // 40 enqueues at once through one driver: one holds the pin, the others take pooled
    // connections; every one lands, once.
    let calls = (0..40).map(|n| {
        let jobs = jobs.clone();
        tokio::spawn(async move { Ping::enqueue(&jobs, Beat { n }).await })
    });
    for call in calls.collect::<Vec<_>>() {
        assert!(!call.await.expect("task").expect("enqueue").deduped);
    }
    let rows: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "select count(*) from {schema}.x_jobs"
    )))
    .fetch_one(&admin)
    .await
    .expect("count");
    assert_eq!(rows, 40);
}

#[tokio::test]
async fn a_key_taken_under_the_plain_insert_answers_its_holder() {
    // Many tasks race one key through the driver's own transactions: the losers' INSERTs fail
    // with a unique violation inside the statement, and each answers the winner, deduped.
    let (_admin, schema) = pg::schema("hot_path_key_race").await;
    let marker = format!("jobs-test-{schema}");
    let jobs = Jobs::new(marked_driver(&schema, &marker).await);
    let barrier = Arc::new(tokio::sync::Barrier::new(16));
    let calls = (0..16).map(|_| {
        let jobs = jobs.clone();
        let barrier = barrier.clone();
        tokio::spawn(async move {
            barrier.wait().await;
            Ping::enqueue(&jobs, Beat { n: 7 }).await
        })
    });
    let mut results = Vec::new();
    for call in calls.collect::<Vec<_>>() {
        results.push(call.await.expect("task").expect("enqueue"));
    }
    let fresh: Vec<_> = results.iter().filter(|r| !r.deduped).collect();
    assert_eq!(fresh.len(), 1, "one insert wins");
    assert!(results.iter().all(|r| r.id == fresh[0].id));
}

/// sqlx 0.9.0 no longer sets `TCP_NODELAY`; without it the tail of a multi-segment message (an
/// `enqueue_many`'s arrays) waits for the server's delayed ACK. The driver sets it on every
/// connection its pool dials.
#[tokio::test]
async fn the_driver_s_connections_send_without_nagle_delay() {
    let driver = PostgresDriver::connect(pg::database_url())
        .await
        .expect("connect");
    for _ in 0..2 {
        let mut conn = driver.pool().acquire().await.expect("acquire");
        assert_eq!(driver.tcp_nodelay(&mut conn).await, Some(true));
    }
}

/// The worker writes its registry row beside its loop, never in front of a claim: while
/// another session holds the registry table locked, so that the write waits, the worker still
/// claims and runs a job. The row lands once the lock goes, and a graceful stop deletes it.
#[tokio::test]
async fn a_registry_write_that_waits_never_holds_up_a_claim() {
    let (admin, schema) = pg::schema("hot_path_registry_beside").await;
    // The driver's own pool, as a user gets it: the pinned connections and the waiting write
    // each hold one of its connections.
    let driver = PostgresDriver::connect(pg::database_url())
        .await
        .expect("connect")
        .with_schema(&schema)
        .expect("schema");
    let jobs = Jobs::new(driver);
    let mut locker = admin.begin().await.expect("begin");
    sqlx::query(AssertSqlSafe(format!(
        "lock table {schema}.x_job_workers in access exclusive mode"
    )))
    .execute(&mut *locker)
    .await
    .expect("lock the registry");

    let queued = Ping::enqueue(&jobs, Beat { n: 1 }).await.expect("enqueue");
    let running = jobs
        .worker()
        .poll_interval(Duration::from_millis(50))
        .build()
        .expect("worker")
        .start();
    let registry = format!("{schema}.x_job_workers");
    let write_waits = || {
        let (admin, registry) = (admin.clone(), registry.clone());
        async move {
            let waiting: i64 = sqlx::query_scalar(
                "select count(*) from pg_locks where not granted and relation = $1::regclass",
            )
            .bind(registry)
            .fetch_one(&admin)
            .await
            .expect("pg_locks");
            waiting == 1
        }
    };
    support::wait::until(
        Duration::from_secs(20),
        "the registry write to wait on the lock",
        write_waits,
    )
    .await;
    support::wait::until(
        Duration::from_secs(20),
        "the job to run while the registry write waits",
        || {
            let jobs = jobs.clone();
            async move {
                let row = jobs.job(queued.id).await.expect("read").expect("row");
                row.state == JobState::Done
            }
        },
    )
    .await;
    assert!(
        write_waits().await,
        "the write still waits: the lock is held"
    );

    locker.rollback().await.expect("unlock");
    support::wait::until(
        Duration::from_secs(20),
        "the registry row once the lock went",
        || {
            let jobs = jobs.clone();
            async move { jobs.operator().workers().await.expect("workers").len() == 1 }
        },
    )
    .await;
    running.shutdown().await;
    assert!(
        jobs.operator().workers().await.expect("workers").is_empty(),
        "a graceful stop deletes the row"
    );
}

/// The table's update count and the running-rows index's scan count, as the server's
/// statistics have them (each backend reports its own a little after its statements end).
async fn ack_statistics(admin: &sqlx::PgPool, schema: &str) -> (i64, i64) {
    sqlx::query_as(
        "select t.n_tup_upd, i.idx_scan
         from pg_stat_user_tables t
         join pg_stat_user_indexes i on i.relid = t.relid
         where t.schemaname = $1 and t.relname = 'x_jobs' and i.indexrelname = 'x_jobs_lapsed_idx'",
    )
    .bind(schema)
    .fetch_one(admin)
    .await
    .expect("statistics")
}

/// Claims up to `limit` rows of the default queue for `worker`, on a 300 s lease.
async fn claim_default(
    driver: &PostgresDriver,
    worker: &str,
    limit: u32,
) -> Vec<jobs::driver::ClaimedJob> {
    let params = jobs::driver::ClaimParams {
        demand: vec![jobs::driver::QueueDemand {
            queue: "default".into(),
            limit,
        }],
        worker_id: worker.into(),
        visibility_timeout: Duration::from_secs(300),
        drop_exhausted: Vec::new(),
        fair_after: String::new(),
        now: chrono::Utc::now(),
    };
    driver.job_claim(&params).await.expect("claim").jobs
}

/// The batched ack finds each row by its primary key, never by reading every running row from
/// `x_jobs_lapsed_idx`: while a snapshot is held, that index keeps an entry for every claim
/// since, and an ack that read them all slowed the whole drain (`examples/held_snapshot.rs`).
/// The planner picks that index whenever its statistics say few rows run, as they do here.
#[tokio::test]
async fn the_batched_ack_reads_its_rows_by_id_not_the_running_rows_index() {
    let (admin, schema) = pg::schema("hot_path_ack_by_id").await;
    let marker = format!("jobs-test-{schema}");
    let driver = marked_driver(&schema, &marker).await;
    let jobs = Jobs::new(driver.clone());
    Ping::enqueue_many(&jobs, (0..1_000).map(|n| Beat { n }))
        .await
        .expect("enqueue");
    let ack = |job: &jobs::driver::ClaimedJob| jobs::driver::AckParams {
        job_id: job.id,
        by: job.by.clone(),
        result: None,
        now: chrono::Utc::now(),
    };
    // 900 jobs run and end one by one, then the statistics are read: few rows run.
    let mut settled = 0;
    while settled < 900 {
        let batch = claim_default(&driver, "ack-by-id", 100).await;
        assert!(!batch.is_empty(), "queued jobs to claim");
        for job in batch {
            assert!(driver.job_ack(&ack(&job)).await.expect("ack"));
            settled += 1;
        }
    }
    sqlx::query(AssertSqlSafe(format!("analyze {schema}.x_jobs")))
        .execute(&admin)
        .await
        .expect("analyze");
    let running = claim_default(&driver, "ack-by-id", 100).await;
    assert_eq!(running.len(), 100);
    // Every claim and ack so far reported (1,000 claims and 900 acks, each one update).
    let reported = |updates: i64| {
        let (admin, schema) = (admin.clone(), schema.clone());
        async move { ack_statistics(&admin, &schema).await.0 >= updates }
    };
    let bound = Duration::from_secs(30);
    support::wait::until(bound, "the claims' statistics", || reported(1_900)).await;
    let (_, scans_before) = ack_statistics(&admin, &schema).await;

    let landed = driver
        .job_ack_many(&running.iter().map(ack).collect::<Vec<_>>())
        .await
        .expect("ack many");
    assert!(landed.iter().all(|landed| *landed));
    support::wait::until(bound, "the batched ack's statistics", || reported(2_000)).await;
    let (updates, scans_after) = ack_statistics(&admin, &schema).await;
    assert_eq!(updates, 2_000, "each row updated once");
    assert_eq!(
        scans_after, scans_before,
        "the batched ack read no running row from x_jobs_lapsed_idx"
    );
}

/// A table's sequential scans and inserted rows so far, as the statistics have them.
async fn scans_and_inserts(admin: &sqlx::PgPool, schema: &str, table: &str) -> (i64, i64) {
    sqlx::query_as(
        "select seq_scan, n_tup_ins from pg_stat_user_tables where schemaname = $1 and relname = $2",
    )
    .bind(schema)
    .bind(table)
    .fetch_one(admin)
    .await
    .expect("statistics")
}

/// The statements that change one running row under its claim (heartbeat, progress note, step
/// write, nack, ack) find it by its primary key. Each session plans a statement once, at its
/// first use: here on a small table never analyzed, where a constant `state = 'running'` had
/// the planner read the whole of `x_jobs_lapsed_idx`, with the id as a filter, on every call.
#[tokio::test]
async fn the_fenced_single_row_statements_find_their_row_by_id() {
    let (admin, schema) = pg::schema("hot_path_fenced_by_id").await;
    let marker = format!("jobs-test-{schema}");
    let driver = marked_driver(&schema, &marker).await;
    let jobs = Jobs::new(driver.clone());
    Ping::enqueue_many(&jobs, (0..20).map(|n| Beat { n }))
        .await
        .expect("enqueue");
    let running = claim_default(&driver, "fenced-by-id", 20).await;
    assert_eq!(running.len(), 20);
    let reported = |updates: i64, steps: i64| {
        let (admin, schema) = (admin.clone(), schema.clone());
        async move {
            ack_statistics(&admin, &schema).await.0 >= updates
                && scans_and_inserts(&admin, &schema, "x_job_steps").await.1 >= steps
        }
    };
    let bound = Duration::from_secs(30);
    support::wait::until(bound, "the claim's statistics", || reported(20, 0)).await;
    let (_, scans_before) = ack_statistics(&admin, &schema).await;

    let now = chrono::Utc::now();
    let (beaten, rest) = running.split_at(5);
    let (noted, rest) = rest.split_at(5);
    let (stepped, acked) = rest.split_at(5);
    for job in beaten {
        let beat = jobs::driver::HeartbeatParams {
            job_id: job.id,
            by: job.by.clone(),
            visibility_timeout: Duration::from_secs(300),
            now,
        };
        assert!(driver.job_heartbeat(&beat).await.expect("heartbeat"));
    }
    for job in noted {
        let note = jobs::driver::ProgressParams {
            job_id: job.id,
            by: job.by.clone(),
            progress: jobs::driver::Progress {
                done: 1,
                total: 2,
                note: None,
            },
            now,
        };
        assert!(driver.job_progress(&note).await.expect("progress"));
    }
    for job in stepped {
        let record = jobs::driver::StepRecord {
            run_id: job.run_id,
            name: "first".into(),
            status: jobs::driver::StepStatus::Completed,
            output: Some(serde_json::json!(1)),
            error: None,
            attempts: 1,
            wake_at: None,
            wait: None,
            updated_at: now,
        };
        let fence = jobs::driver::StepFence {
            job_id: job.id,
            by: job.by.clone(),
        };
        let put = jobs::driver::StepPutParams {
            record: &record,
            fence: &fence,
        };
        assert!(driver.step_put(&put).await.expect("step"));
        let nack = jobs::driver::NackParams {
            job_id: job.id,
            by: job.by.clone(),
            target: jobs::driver::NackTarget::Retry,
            run_at: now,
            counts_as_attempt: true,
            error: None,
            error_code: None,
            now,
        };
        assert!(driver.job_nack(&nack).await.expect("nack"));
    }
    for job in acked {
        let ack = jobs::driver::AckParams {
            job_id: job.id,
            by: job.by.clone(),
            result: None,
            now,
        };
        assert!(driver.job_ack(&ack).await.expect("ack"));
    }
    // 20 claims, then 5 heartbeats, 5 progress notes, 5 nacks and 5 acks; 5 step records.
    support::wait::until(bound, "the statements' statistics", || reported(40, 5)).await;
    let (updates, scans_after) = ack_statistics(&admin, &schema).await;
    assert_eq!(updates, 40, "each statement updated its one row");
    assert_eq!(
        scans_after, scans_before,
        "no fenced statement read x_jobs_lapsed_idx"
    );
}

/// The pinned connections prepare their statements afresh (`PostgresDriver::replan_every`, here
/// at every use), so a plan made while the table was nearly empty does not outlive it: the
/// single enqueue, planned on 20 analyzed rows, scanned the whole table for its key and wake
/// probes on every later call; planned again on 2,020 rows, it reads them by index.
#[tokio::test]
async fn a_pinned_connection_plans_its_statements_afresh() {
    let (admin, schema) = pg::schema("hot_path_replan").await;
    let marker = format!("jobs-test-{schema}");
    let driver = marked_driver(&schema, &marker)
        .await
        .replan_every(Duration::ZERO);
    let jobs = Jobs::new(driver);
    Ping::enqueue_many(&jobs, (0..20).map(|n| Beat { n }))
        .await
        .expect("enqueue");
    sqlx::query(AssertSqlSafe(format!("analyze {schema}.x_jobs")))
        .execute(&admin)
        .await
        .expect("analyze");
    // Planned on 20 rows.
    Ping::enqueue(&jobs, Beat { n: 20 }).await.expect("enqueue");
    Ping::enqueue_many(&jobs, (21..2_021).map(|n| Beat { n }))
        .await
        .expect("enqueue");
    let inserted = |rows: i64| {
        let (admin, schema) = (admin.clone(), schema.clone());
        async move { scans_and_inserts(&admin, &schema, "x_jobs").await.1 >= rows }
    };
    let bound = Duration::from_secs(30);
    support::wait::until(bound, "the inserts' statistics", || inserted(2_021)).await;
    let (scans_before, _) = scans_and_inserts(&admin, &schema, "x_jobs").await;
    let live_key = "x_jobs_name_tenant_idempotency_live_idx";
    let keys_before = index_tuples_read(&admin, &schema, live_key).await;

    Ping::enqueue(&jobs, Beat { n: 2_021 })
        .await
        .expect("enqueue");
    support::wait::until(bound, "the enqueue's statistics", || inserted(2_022)).await;
    let (scans_after, _) = scans_and_inserts(&admin, &schema, "x_jobs").await;
    assert_eq!(
        scans_after, scans_before,
        "the enqueue, planned afresh on 2,021 rows, scanned no table"
    );
    // Planned on a near-empty table, the wake's probe walked the live-key index by tenant alone
    // (a fresh database's single enqueues ran at a third of their rate until the plan was made
    // again); planned afresh, it reads no key but its own.
    let keys_read = index_tuples_read(&admin, &schema, live_key).await - keys_before;
    assert!(
        keys_read <= 1,
        "the enqueue read {keys_read} live-key entries (at most its own key's)"
    );
}

/// Index entries a table's indexes have read so far, by index name, as the statistics have them.
async fn index_tuples_read(admin: &sqlx::PgPool, schema: &str, index: &str) -> i64 {
    sqlx::query_scalar(
        "select idx_tup_read from pg_stat_user_indexes where schemaname = $1 and indexrelname = $2",
    )
    .bind(schema)
    .bind(index)
    .fetch_one(admin)
    .await
    .expect("statistics")
}
