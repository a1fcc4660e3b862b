//! Retention: `job_purge` deletes finished rows past their windows, in bounded batches, with
//! their runs' steps, and never a live row.

use std::sync::Arc;

use super::*;
use crate::driver::{
    JobDriver, JobGetParams, JobPurgeParams, NackTarget, StepFence, StepListParams, StepPutParams,
    StepRecord, StepStatus,
};

/// Done rows past the done window go with their steps; failed and dead rows wait for the longer
/// window; live rows and recent rows stay.
pub async fn job_purge_deletes_finished_rows_past_their_windows(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    // Settled at t0: one done (with a step), one failed, one dead; one still ready.
    let done = enqueue_key(d, "done").await;
    let failed = enqueue_key(d, "failed").await;
    let dead = enqueue_key(d, "dead").await;
    let mut claimed = claim(d, &claim_params("w1", 3, t0())).await.jobs;
    claimed.sort_by_key(|j| j.id);
    let live = enqueue_key(d, "live").await;
    for job in &claimed {
        if job.id == done {
            let step = StepRecord {
                run_id: job.run_id,
                name: "s".into(),
                status: StepStatus::Completed,
                output: Some(serde_json::json!(1)),
                error: None,
                attempts: 1,
                wake_at: None,
                wait: None,
                updated_at: t0(),
            };
            let fence = StepFence {
                job_id: job.id,
                by: job.by.clone(),
            };
            assert!(d
                .step_put(&StepPutParams {
                    record: &step,
                    fence: &fence
                })
                .await
                .unwrap());
            assert!(ack(d, job.id, &job.by, t0()).await);
        } else {
            let target = if job.id == failed {
                NackTarget::Fail
            } else {
                NackTarget::DeadLetter
            };
            assert!(nack(d, &nack_params(job.id, &job.by, target, t0(), t0())).await);
        }
    }
    let done_run = get(d, done).await.run_id;

    // Done rows older than 60 s go; failed/dead only past 3600 s.
    let params = JobPurgeParams {
        done_before: at(60),
        finished_before: at(0),
        limit: 100,
    };
    assert_eq!(d.job_purge(&params).await.unwrap(), 1);
    assert_eq!(d.job_get(&JobGetParams { id: done }).await.unwrap(), None);
    assert!(
        d.step_list(&StepListParams { run_id: done_run })
            .await
            .unwrap()
            .is_empty(),
        "its steps went too"
    );
    assert!(d
        .job_get(&JobGetParams { id: failed })
        .await
        .unwrap()
        .is_some());
    assert!(d
        .job_get(&JobGetParams { id: dead })
        .await
        .unwrap()
        .is_some());

    let params = JobPurgeParams {
        done_before: at(3601),
        finished_before: at(3601),
        limit: 100,
    };
    assert_eq!(d.job_purge(&params).await.unwrap(), 2);
    assert_eq!(
        get(d, live).await.state,
        JobState::Ready,
        "live rows are never purged"
    );
}

/// One purge deletes at most `limit` rows of each group, oldest first.
pub async fn job_purge_is_bounded_by_its_limit(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    for i in 0..5 {
        enqueue_key(d, &format!("k{i}")).await;
    }
    for job in claim(d, &claim_params("w1", 5, t0())).await.jobs {
        assert!(ack(d, job.id, &job.by, t0()).await);
    }
    let params = JobPurgeParams {
        done_before: at(10),
        finished_before: at(10),
        limit: 2,
    };
    assert_eq!(d.job_purge(&params).await.unwrap(), 2);
    assert_eq!(d.job_purge(&params).await.unwrap(), 2);
    assert_eq!(d.job_purge(&params).await.unwrap(), 1);
    assert_eq!(d.job_purge(&params).await.unwrap(), 0);
}
