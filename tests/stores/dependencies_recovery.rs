//! Dependencies when a process dies between a dependency's settle and the release pass that
//! follows it: the settle's own write noted the job (`x_job_releases`, by trigger), so the next
//! pass, which any worker runs when it starts and about once a minute
//! (`JobDriver::job_release_pending`), judges its dependents. The death is played by settling
//! the dependency with a raw statement, which runs no pass.

use crate::support;

use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};
use support::sqlite::{driver_in, TempDir};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Step {
    n: u32,
}

#[job(key = "stage:{n}", tenant = none)]
async fn recovery_stage(_run: Run, _input: Step) -> Result<(), JobError> {
    Ok(())
}

/// Enqueues a dependency and a job depending on it; answers both ids.
async fn pair(jobs: &Jobs) -> (jobs::driver::JobId, jobs::driver::JobId) {
    let first = RecoveryStage::enqueue(jobs, Step { n: 1 })
        .await
        .expect("enqueue");
    let after = EnqueueOptions::new().depends_on([first.id]);
    let then = RecoveryStage::enqueue_with(jobs, Step { n: 2 }, after)
        .await
        .expect("enqueue");
    (first.id, then.id)
}

async fn state(jobs: &Jobs, id: jobs::driver::JobId) -> JobState {
    jobs.job(id).await.expect("read").expect("row").state
}

#[tokio::test]
async fn postgres_judges_what_a_dead_process_left_at_the_next_sweep() {
    let (pool, schema) = support::pg::schema("dependencies_recovery").await;
    let jobs = Jobs::new(PostgresDriver::new(pool.clone(), &schema).expect("schema"));
    let (first, then) = pair(&jobs).await;
    sqlx::query(AssertSqlSafe(format!(
        "update {schema}.x_jobs set state = 'done', updated_at = now() where id = $1"
    )))
    .bind(first)
    .execute(&pool)
    .await
    .expect("settle");
    assert_eq!(state(&jobs, then).await, JobState::Suspended, "no pass ran");
    let noted: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "select count(*) from {schema}.x_job_releases"
    )))
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(noted, 1, "the settle noted its dependents for judging");
    jobs.driver()
        .job_release_pending(jobs.now())
        .await
        .expect("sweep");
    assert_eq!(state(&jobs, then).await, JobState::Ready);
}

#[tokio::test]
async fn sqlite_judges_what_a_dead_process_left_at_the_next_sweep() {
    let dir = TempDir::new("dependencies_recovery");
    let jobs = Jobs::new(driver_in(&dir).await);
    let (first, then) = pair(&jobs).await;
    let raw = jobs::sqlx::SqlitePool::connect(&dir.url())
        .await
        .expect("open");
    sqlx::query("update x_jobs set state = 'done' where id = ?1")
        .bind(first)
        .execute(&raw)
        .await
        .expect("settle");
    assert_eq!(state(&jobs, then).await, JobState::Suspended, "no pass ran");
    jobs.driver()
        .job_release_pending(jobs.now())
        .await
        .expect("sweep");
    assert_eq!(state(&jobs, then).await, JobState::Ready);
}
