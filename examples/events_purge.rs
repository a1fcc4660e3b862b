//! The purge job over a Postgres queue that published 1,000,000 events: after one pass only the
//! live events are left.
//!
//! ```text
//! DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo run --example events_purge
//! ```
//!
//! The example publishes 20,000 events through `Jobs::publish_event` (the real path, 16 at a
//! time) and loads 980,000 more with one `insert .. select` of the same columns (publishing a
//! million one by one would measure the publish, not the purge): 900,000 published 8 to 30 days
//! ago with the default 7-day ttl (expired), 100,000 within the last 6 days (live). A worker
//! then runs one pass of a purge job declared over the built-in `events` and `jobs` targets,
//! and the example prints the rows before and after and how long the pass took, then runs a
//! second pass over nothing expired (the expiry index lets it stop at once).
//!
//! One run here (debug build, Postgres on localhost, a 2-core machine shared with other builds):
//! 1,000,000 events stored (291 MB with indexes; the 20,000 published in 8.44 s), 100,000 live;
//! the pass took 58.32 s from enqueue to done and deleted 900,000 events in batches of 5,000
//! (about 15,400 rows/s), leaving exactly the 100,000 live ones; a second pass over nothing
//! expired took 0.048 s. The printout gives the figures of each run.

use std::time::{Duration, Instant};

use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::purge::{Purge, PurgePass, PurgeReport};
use jobs::sqlx::{self, AssertSqlSafe};
use jobs::{Registry, Retention};

const SCHEMA: &str = "events_purge_demo";
const PUBLISHED: u64 = 20_000;
const LOADED_EXPIRED: u64 = 900_000;
const LOADED_LIVE: u64 = 80_000;

/// The purge job: expired events, then finished jobs past their windows.
#[job(name = "demo.purge", key = "purge", tenant = none)]
async fn purge_expired(run: Run, _pass: PurgePass) -> Result<PurgeReport, JobError> {
    Purge::new()
        .expired_events()
        .finished_jobs(Retention::default())
        .run(&run)
        .await
}

/// Its hourly trigger (a scheduler fires it; this example enqueues the pass itself).
#[task(name = "demo.purge.hourly", cron = "23 * * * *", tz = "UTC")]
fn purge_hourly(_at: &Occurrence) -> Vec<Entry> {
    vec![Entry::of::<PurgeExpired>(PurgePass::default())]
}

fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

async fn counts(pool: &sqlx::PgPool) -> Result<(i64, i64), JobError> {
    let row: (i64, i64) = sqlx::query_as(AssertSqlSafe(format!(
        "select count(*), count(*) filter (where expires_at > now()) from {SCHEMA}.x_job_events"
    )))
    .fetch_one(pool)
    .await?;
    Ok(row)
}

/// Enqueues one pass and runs a worker until it settles; answers the pass's wall time and the
/// rows each target deleted (read from its steps).
async fn one_pass(jobs: &Jobs, registry: &Registry) -> Result<(Duration, String), JobError> {
    let worker = jobs
        .worker()
        .registry(registry.clone())
        .poll_interval(Duration::from_millis(20))
        .idle_poll_max(Duration::from_millis(50))
        .build()?;
    let started = Instant::now();
    let queued = PurgeExpired::enqueue(jobs, PurgePass::default()).await?;
    let running = worker.start();
    let job = loop {
        let job = jobs.job(queued.id).await?.expect("the pass's job");
        if !job.state.is_live() {
            break job;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = started.elapsed();
    running.shutdown().await;
    assert_eq!(job.state, JobState::Done, "{:?}", job.last_error);
    let steps = jobs
        .driver()
        .step_list(&jobs::driver::StepListParams { run_id: job.run_id })
        .await?;
    let deleted = ["events", "jobs"]
        .iter()
        .map(|name| {
            let rows = steps
                .iter()
                .find(|s| s.name == *name)
                .and_then(|s| s.output.clone())
                .unwrap_or_default();
            format!("{name}: {rows}")
        })
        .collect::<Vec<_>>()
        .join(", ");
    Ok((took, deleted))
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let driver = PostgresDriver::connect(&database_url())
        .await?
        .with_schema(SCHEMA)?;
    let pool = driver.pool().clone();
    sqlx::raw_sql(AssertSqlSafe(format!(
        "drop schema if exists {SCHEMA} cascade"
    )))
    .execute(&pool)
    .await?;
    driver.migrate().await?;
    let jobs = Jobs::new(driver);

    let loading = Instant::now();
    let mut publishers = tokio::task::JoinSet::new();
    for p in 0..16u64 {
        let jobs = jobs.clone();
        publishers.spawn(async move {
            for i in (p..PUBLISHED).step_by(16) {
                jobs.publish_event(
                    "order.shipped",
                    &format!("order-{i}"),
                    &serde_json::json!({ "i": i }),
                )
                .await?;
            }
            Ok::<_, JobError>(())
        });
    }
    while let Some(done) = publishers.join_next().await {
        done.expect("a publisher task")?;
    }
    let published = loading.elapsed();
    // The rest, with the columns a publish writes: published 8 to 30 days ago (expired under
    // the 7-day ttl), or within the last 6 days (live).
    sqlx::raw_sql(AssertSqlSafe(format!(
        "insert into {SCHEMA}.x_job_events (id, name, key, payload, published_at, expires_at)
             select gen_random_uuid(), 'order.shipped', 'old-' || g, jsonb_build_object('i', g), p, p + interval '7 days'
             from generate_series(1, {LOADED_EXPIRED}) g,
                  lateral (select now() - interval '8 days' - (g % 22) * interval '1 day' - (g % 86400) * interval '1 second' as p) t;
         insert into {SCHEMA}.x_job_events (id, name, key, payload, published_at, expires_at)
             select gen_random_uuid(), 'order.shipped', 'new-' || g, jsonb_build_object('i', g), p, p + interval '7 days'
             from generate_series(1, {LOADED_LIVE}) g,
                  lateral (select now() - (g % 6) * interval '1 day' - (g % 86400) * interval '1 second' as p) t;
         analyze {SCHEMA}.x_job_events;"
    )))
    .execute(&pool)
    .await?;
    let (total, live) = counts(&pool).await?;
    println!(
        "{total} events stored ({PUBLISHED} published through publish_event in {:.2} s, the rest loaded), {live} live, {} expired",
        published.as_secs_f64(),
        total - live
    );
    let size: String = sqlx::query_scalar(AssertSqlSafe(format!(
        "select pg_size_pretty(pg_total_relation_size('{SCHEMA}.x_job_events'))"
    )))
    .fetch_one(&pool)
    .await?;
    println!("x_job_events before: {size} with its indexes");

    let mut registry = Registry::new();
    registry
        .register::<PurgeExpired>()?
        .register_task::<PurgeHourly>()?;

    let (took, deleted) = one_pass(&jobs, &registry).await?;
    let (after, live_after) = counts(&pool).await?;
    println!(
        "purge pass: {:.2} s from enqueue to done ({deleted}); {after} events left, {live_after} of them live",
        took.as_secs_f64()
    );
    assert_eq!(after, live_after, "only live events are left");
    assert_eq!(live_after, live, "every live event is kept");

    let (again, deleted) = one_pass(&jobs, &registry).await?;
    println!(
        "a second pass over nothing expired: {:.3} s ({deleted})",
        again.as_secs_f64()
    );
    Ok(())
}
