//! A real worker process on Redis is SIGKILLed in the middle of a multi-step job; another
//! worker process finishes the job once the visibility timeout lapses. Completed steps are not
//! run again and nothing is lost. The scenario is `support/crash.rs`, shared with
//! `crash_postgres.rs` and `crash_sqlite.rs`; the queue is a `redis-server` of the test's own,
//! the side effects a Postgres schema of its own (`support/chaos/on_redis/store.rs`).

use crate::chaos;
use crate::crash;

use std::time::Instant;

use chaos::on_redis::store::RedisStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_redis_a_killed_worker_s_job_is_finished_by_another_without_rerunning_completed_steps(
) {
    let started = Instant::now();
    let store = RedisStore::start("crash_redis_kill_mid_step").await;
    crash::a_killed_worker_s_job_is_finished_by_another(&store).await;
    println!("crash on redis: {:.1} s", started.elapsed().as_secs_f64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_redis_a_parked_run_resumes_on_time_on_an_idle_process() {
    let store = RedisStore::start("crash_redis_on_time_resume").await;
    crash::a_parked_run_resumes_on_time_on_another_process(&store).await;
}
