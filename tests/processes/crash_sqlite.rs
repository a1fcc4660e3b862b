//! Crash safety on a SQLite file, with real processes:
//!
//! - a worker process SIGKILLed in the middle of a multi-step job: another worker process
//!   finishes the job once the visibility timeout lapses, without running a completed step
//!   again (the scenario `support/crash.rs`, shared with `crash_postgres.rs`);
//! - a process SIGKILLed in the middle of a long `enqueue_many` (its write transaction open,
//!   uncommitted pages already spilled into the WAL): the file opens, `PRAGMA integrity_check`
//!   answers `ok`, and the batch is all or nothing (here: nothing);
//! - a run parked by `run.sleep` in a process then SIGKILLed resumes on an idle process (polling
//!   every 20 s) within 1 s of its due time (`support/crash.rs`, also on Postgres and Redis).

use crate::support;

use crate::crash;

use std::time::{Duration, Instant};

use jobs::driver::SqliteDriver;
use jobs::sqlx;
use support::sqlite::TempDir;
use support::store::Store;
use support::wait;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_s_job_is_finished_by_another_without_rerunning_completed_steps() {
    let started = Instant::now();
    let store = Store::sqlite("crash_kill_mid_step").await;
    crash::a_killed_worker_s_job_is_finished_by_another(&store).await;
    println!("crash on sqlite: {:.1} s", started.elapsed().as_secs_f64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_run_resumes_on_time_on_an_idle_process() {
    let store = Store::sqlite("on_time_resume").await;
    crash::a_parked_run_resumes_on_time_on_another_process(&store).await;
}

/// Jobs in each killed batch: enough that the write runs for a while and spills pages.
const BATCH: u64 = 60_000;

/// How far each round lets the batch get before the kill: the WAL's growth past its size at
/// the start of the round (0: as soon as the write lock is held).
const KILL_AFTER_WAL_BYTES: [u64; 3] = [0, 2 << 20, 12 << 20];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_mid_batch_leaves_an_intact_file_and_none_of_the_batch() {
    let started = Instant::now();
    let dir = TempDir::new("crash_mid_write");
    let url = dir.url();
    let wal = dir.path().join("jobs.db-wal");
    {
        // A committed job before the batches, which must survive them.
        let driver = support::sqlite::driver_in(&dir).await;
        let jobs = jobs::Jobs::new(driver.clone());
        crash::TwoSteps::enqueue(&jobs, crash::Work { n: 0 })
            .await
            .expect("enqueue");
        driver.close().await;
    }
    for (round, after) in KILL_AFTER_WAL_BYTES.into_iter().enumerate() {
        let wal_at_start = wal_size(&wal);
        let first = (1 + round as u64 * BATCH).to_string();
        let mut child = crash::start_worker(
            &url,
            "main",
            &[
                ("ENQUEUE_BATCH", &BATCH.to_string()),
                ("BATCH_FIRST", &first),
            ],
        );
        wait::until(
            Duration::from_secs(60),
            "the batch to be writing",
            || async {
                wal_size(&wal) >= wal_at_start + after && support::sqlite::write_locked(&url).await
            },
        )
        .await;
        child.kill().expect("SIGKILL the enqueuer");
        child.wait().expect("reap the enqueuer");
        let grown = wal_size(&wal).saturating_sub(wal_at_start);

        // The first connection since the kill opens the file (recovering the WAL).
        let driver = SqliteDriver::connect(&url).await.expect("the file opens");
        let check: Vec<String> = sqlx::query_scalar("pragma integrity_check")
            .fetch_all(driver.pool())
            .await
            .expect("integrity check");
        assert_eq!(check, ["ok"], "round {round}: the file is intact");
        let jobs: i64 = sqlx::query_scalar("select count(*) from x_jobs")
            .fetch_one(driver.pool())
            .await
            .expect("count");
        assert_eq!(
            jobs, 1,
            "round {round}: the batch left nothing (the kill landed mid-write), the job before it stayed"
        );
        driver.close().await;
        println!(
            "round {round}: killed with the write lock held and {grown} bytes of WAL written by \
             the batch; integrity ok, no row of the batch"
        );
    }

    // The file still takes writes: a batch that is let finish is all there.
    let driver = support::sqlite::driver_in(&dir).await;
    let jobs = jobs::Jobs::new(driver.clone());
    jobs.enqueue_many::<crash::TwoSteps, _>((1_000_000..1_000_100).map(|n| crash::Work { n }))
        .await
        .expect("enqueue after the kills");
    let stored: i64 = sqlx::query_scalar("select count(*) from x_jobs")
        .fetch_one(driver.pool())
        .await
        .expect("count");
    assert_eq!(stored, 101);
    println!(
        "mid-write kills on sqlite: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

fn wal_size(wal: &std::path::Path) -> u64 {
    std::fs::metadata(wal).map_or(0, |m| m.len())
}
