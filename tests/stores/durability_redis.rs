//! What a Redis store keeps across a crash of the server: with `appendonly yes` and
//! `appendfsync always`, every enqueue and every settle the driver acknowledged is there after
//! a SIGKILL of `redis-server` and a restart; without persistence, nothing is (the guide's
//! table, `docs/redis.md`).

use std::sync::Arc;
use std::time::Duration;

use jobs::driver::{
    AckParams, ClaimParams, JobDriver, JobGetParams, JobState, QueueDemand, RedisDriver,
};
use jobs::prelude::*;
use jobs::Jobs;

use crate::support;
use support::redis::{Persistence, RedisServer};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Parcel {
    n: u32,
}

#[job(key = "{n}", tenant = none)]
async fn kept_parcel(_run: Run, _input: Parcel) -> Result<(), JobError> {
    Ok(())
}

const ENQUEUED: u32 = 200;
const ACKED: u32 = 120;

/// Enqueues [`ENQUEUED`] jobs and acks [`ACKED`] of them, each acknowledged by the server;
/// answers the ids and which were acked.
async fn acknowledged_work(
    driver: &RedisDriver,
) -> (Vec<jobs::driver::JobId>, Vec<jobs::driver::JobId>) {
    let jobs = Jobs::new(driver.clone());
    let mut ids = Vec::new();
    for n in 0..ENQUEUED {
        ids.push(jobs.enqueue::<KeptParcel>(Parcel { n }).await.unwrap().id);
    }
    let now = chrono::Utc::now();
    let claimed = driver
        .job_claim(&ClaimParams {
            demand: vec![QueueDemand {
                queue: "default".into(),
                limit: ACKED,
            }],
            worker_id: "w1".into(),
            visibility_timeout: Duration::from_secs(600),
            drop_exhausted: Vec::new(),
            fair_after: String::new(),
            now,
        })
        .await
        .unwrap();
    assert_eq!(claimed.jobs.len(), ACKED as usize);
    let acks: Vec<AckParams> = claimed
        .jobs
        .iter()
        .map(|j| AckParams {
            job_id: j.id,
            by: j.by.clone(),
            result: None,
            now,
        })
        .collect();
    assert!(driver.job_ack_many(&acks).await.unwrap().iter().all(|l| *l));
    (ids, claimed.jobs.iter().map(|j| j.id).collect())
}

async fn states(driver: &Arc<dyn JobDriver>, ids: &[jobs::driver::JobId]) -> Vec<Option<JobState>> {
    let mut out = Vec::new();
    for id in ids {
        let job = driver.job_get(&JobGetParams { id: *id }).await.unwrap();
        out.push(job.map(|j| j.state));
    }
    out
}

#[tokio::test]
async fn with_appendfsync_always_every_acknowledged_enqueue_and_ack_survives_a_sigkill() {
    let mut server = RedisServer::start("durable_always", Persistence::AofAlways);
    let url = format!("{}/?require_durability=always", server.url());
    let (ids, acked) = {
        let driver = RedisDriver::connect(&url).await.unwrap();
        acknowledged_work(&driver).await
    };
    server.kill();
    server.restart();
    let driver: Arc<dyn JobDriver> = Arc::new(RedisDriver::connect(&url).await.unwrap());
    let found = states(&driver, &ids).await;
    for (id, state) in ids.iter().zip(&found) {
        let expected = if acked.contains(id) {
            JobState::Done
        } else {
            JobState::Ready
        };
        assert_eq!(*state, Some(expected), "job {id} after the restart");
    }
}

#[tokio::test]
async fn without_persistence_a_sigkill_loses_everything_as_the_guide_says() {
    let mut server = RedisServer::start("durable_none", Persistence::None);
    let (ids, _) = {
        let driver = RedisDriver::connect(&server.url()).await.unwrap();
        acknowledged_work(&driver).await
    };
    server.kill();
    server.restart();
    let driver: Arc<dyn JobDriver> = Arc::new(RedisDriver::connect(&server.url()).await.unwrap());
    assert!(states(&driver, &ids).await.iter().all(Option::is_none));
}
