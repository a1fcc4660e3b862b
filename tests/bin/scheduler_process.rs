//! A scheduler process for the Postgres handover test: one every-minute task (`run-all`) firing
//! one job per occurrence, on the schema named by `JOBS_SCHEMA`, under the id `SCHEDULER_ID`.
//!
//! Cron is minute-grained, so the process runs on a clock `SCALE` times faster than the wall
//! (default 60: a minute a second), shared by every process of the test: simulated time is
//! `BASE_SIM_MS + (wall ms - BASE_WALL_MS) * SCALE`. Prints `ready` once started.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jobs::clock::{Clock, Timestamp};
use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::{CatchUp, Registry, Task, TaskDescriptor};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Minute {
    at: String,
}

#[job(key = "minute:{at}", tenant = none)]
async fn every_minute_job(_run: Run, _input: Minute) -> Result<(), JobError> {
    Ok(())
}

struct EveryMinute;

impl Task for EveryMinute {
    const DESCRIPTOR: TaskDescriptor = TaskDescriptor {
        name: "every-minute",
        cron: "* * * * *",
        tz: "UTC",
        catch_up: CatchUp::RunAll,
        max_catch_up: 10,
    };

    fn entries(at: &Occurrence) -> Vec<Entry> {
        vec![Entry::of::<EveryMinuteJob>(Minute {
            at: at.at().to_rfc3339(),
        })]
    }
}

#[derive(Debug)]
struct ScaledClock {
    base_wall_ms: i64,
    base_sim_ms: i64,
    scale: i64,
}

fn wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Clock for ScaledClock {
    fn now(&self) -> Timestamp {
        let ms = self.base_sim_ms + (wall_ms() - self.base_wall_ms) * self.scale;
        Timestamp::from_timestamp_millis(ms).expect("a valid instant")
    }

    fn sleep_until(&self, deadline: Timestamp) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let sim = (deadline - self.now()).num_milliseconds().max(0);
        let wall = Duration::from_millis((sim / self.scale).max(1) as u64);
        Box::pin(tokio::time::sleep(wall))
    }
}

fn env_i64(name: &str, default: i64) -> i64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let url = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let schema = std::env::var("JOBS_SCHEMA").expect("JOBS_SCHEMA");
    let id = std::env::var("SCHEDULER_ID").expect("SCHEDULER_ID");
    let clock = ScaledClock {
        base_wall_ms: env_i64("BASE_WALL_MS", wall_ms()),
        base_sim_ms: env_i64("BASE_SIM_MS", 1_893_456_000_000),
        scale: env_i64("SCALE", 60).max(1),
    };
    let ttl = Duration::from_millis(env_i64("LEASE_TTL_MS", 30_000) as u64);
    let driver = PostgresDriver::connect(&url).await?.with_schema(&schema)?;
    let jobs = Jobs::with_clock(Arc::new(driver), Arc::new(clock));
    let mut registry = Registry::new();
    registry.register_task::<EveryMinute>()?;
    let scheduler = jobs
        .scheduler()
        .registry(registry)
        .id(id)
        .lease_ttl(ttl)
        .build()?;
    let _running = scheduler.start();
    println!("ready");
    std::future::pending::<()>().await;
    Ok(())
}
