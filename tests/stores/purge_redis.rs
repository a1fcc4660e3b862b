//! Retention on Redis leaves nothing behind: a purged job's keys go with it, and its id and
//! run id leave the id index (which lives in other slots on a cluster, so the script cannot
//! take them itself).

use std::time::Duration;

use jobs::driver::{AckParams, ClaimParams, JobDriver, JobPurgeParams, QueueDemand, RedisDriver};
use jobs::prelude::*;
use jobs::Jobs;

use crate::support;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Chore {
    n: u32,
}

#[job(key = "{n}", tenant = none)]
async fn purged_chore(_run: Run, _input: Chore) -> Result<(), JobError> {
    Ok(())
}

#[tokio::test]
async fn a_purged_job_leaves_no_key_and_no_index_entry() {
    let server = support::redis::shared_server();
    let prefix = support::redis::prefix("purge_index");
    let driver = RedisDriver::connect(&format!("{}/?prefix={prefix}", server.url()))
        .await
        .unwrap();
    let jobs = Jobs::new(driver.clone());
    for n in 0..20 {
        PurgedChore::enqueue(&jobs, Chore { n }).await.unwrap();
    }
    let now = chrono::Utc::now();
    let claimed = driver
        .job_claim(&ClaimParams {
            demand: vec![QueueDemand {
                queue: "default".into(),
                limit: 20,
            }],
            worker_id: "w".into(),
            visibility_timeout: Duration::from_secs(60),
            drop_exhausted: Vec::new(),
            fair_after: String::new(),
            now,
        })
        .await
        .unwrap();
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
    let indexed = || {
        server
            .cli(&["--scan", "--pattern", &format!("{{{prefix}:ix:*")])
            .lines()
            .map(|key| server.cli(&["hlen", key]).parse::<u64>().unwrap_or(0))
            .sum::<u64>()
    };
    assert_eq!(
        indexed(),
        20,
        "each job's id is indexed (its run id is the same)"
    );
    let later = now + chrono::TimeDelta::hours(1);
    let gone = driver
        .job_purge(&JobPurgeParams {
            done_before: later,
            finished_before: later,
            limit: 1_000,
        })
        .await
        .unwrap();
    assert_eq!(gone, 20);
    assert_eq!(indexed(), 0, "the purge took every entry out of the index");
    let job_keys = server.cli(&[
        "--scan",
        "--pattern",
        &format!("{{{prefix}:q:default}}:j:*"),
    ]);
    assert_eq!(job_keys, "", "no job hash is left");
}
