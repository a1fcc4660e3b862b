//! `step_put` / `step_list`: round trip, overwrite by name, the claim fence, one run's steps.

use std::sync::Arc;

use uuid::Uuid;

use super::*;
use crate::driver::{StepListParams, StepPutParams};

async fn list(d: &dyn JobDriver, run_id: RunId) -> Vec<StepRecord> {
    let mut steps = d
        .step_list(&StepListParams { run_id })
        .await
        .unwrap_or_else(|e| panic!("step_list failed: {e}"));
    steps.sort_by(|a, b| a.name.cmp(&b.name));
    steps
}

/// Every field of every status comes back as written: outputs, errors, wake times and waits.
pub async fn step_put_then_list_round_trips(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    enqueue_key(d, "k").await;
    let job = claim_one(d, "w1", t0()).await;
    let fence = step_fence(&job);
    let records = vec![
        completed_step_record(
            job.run_id,
            "a-completed",
            serde_json::json!({ "id": "msg-1", "n": [1, 2.5, null, true], "o": { "z": 1, "a": "é" } }),
            at(1),
        ),
        StepRecord {
            run_id: job.run_id,
            name: "b-failed".into(),
            status: StepStatus::Failed,
            output: None,
            error: Some("X_TIMEOUT: the call timed out".into()),
            attempts: 3,
            wake_at: None,
            wait: None,
            updated_at: at(2),
        },
        StepRecord {
            run_id: job.run_id,
            name: "c-sleep:3days".into(),
            status: StepStatus::Sleeping,
            output: None,
            error: None,
            attempts: 1,
            wake_at: Some(at(3 * 86_400)),
            wait: None,
            updated_at: at(3),
        },
        StepRecord {
            run_id: job.run_id,
            name: "d-wait:invoice.paid".into(),
            status: StepStatus::Waiting,
            output: None,
            error: None,
            attempts: 1,
            wake_at: None,
            wait: Some(WaitSpec {
                event: "invoice.paid".into(),
                key: "inv-1".into(),
                deadline: at(3600),
                since: EventSince {
                    at: at(4),
                    mark: d.event_mark().await.unwrap(),
                },
            }),
            updated_at: at(4),
        },
        completed_step_record(job.run_id, "e-null", serde_json::Value::Null, at(5)),
    ];
    for record in &records {
        assert!(
            d.step_put(&StepPutParams {
                record,
                fence: &fence
            })
            .await
            .unwrap(),
            "{}",
            record.name
        );
    }
    assert_eq!(list(d, job.run_id).await, records);
}

/// A second write of the same name replaces the first: one record per `(run, name)`.
pub async fn step_put_overwrites_by_name(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    enqueue_key(d, "k").await;
    let job = claim_one(d, "w1", t0()).await;
    let fence = step_fence(&job);
    let mut record = StepRecord {
        run_id: job.run_id,
        name: "charge".into(),
        status: StepStatus::Failed,
        output: None,
        error: Some("X_INVARIANT: first try".into()),
        attempts: 1,
        wake_at: None,
        wait: None,
        updated_at: at(1),
    };
    assert!(d
        .step_put(&StepPutParams {
            record: &record,
            fence: &fence
        })
        .await
        .unwrap());
    record = completed_step_record(job.run_id, "charge", serde_json::json!("ch_1"), at(2));
    record.attempts = 2;
    assert!(d
        .step_put(&StepPutParams {
            record: &record,
            fence: &fence
        })
        .await
        .unwrap());
    assert_eq!(list(d, job.run_id).await, vec![record]);
}

/// A step write lands only while its claim holds the row: not under a lapsed claim, not after
/// the row settled; the live claim still writes.
pub async fn step_put_is_fenced_on_the_claim(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let id = enqueue_key(d, "k").await;
    let first = claim_one(d, "w1", t0()).await;
    assert!(d
        .step_put(&StepPutParams {
            record: &completed_step_record(first.run_id, "one", serde_json::json!(1), at(1)),
            fence: &step_fence(&first)
        })
        .await
        .unwrap());
    let second = claim_one(d, "w2", at(30)).await;
    let stale = completed_step_record(first.run_id, "two", serde_json::json!("stale"), at(31));
    assert!(
        !d.step_put(&StepPutParams {
            record: &stale,
            fence: &step_fence(&first)
        })
        .await
        .unwrap(),
        "lapsed claim"
    );
    let overwrite = completed_step_record(first.run_id, "one", serde_json::json!("stale"), at(31));
    assert!(!d
        .step_put(&StepPutParams {
            record: &overwrite,
            fence: &step_fence(&first)
        })
        .await
        .unwrap());
    let live = completed_step_record(second.run_id, "two", serde_json::json!(2), at(31));
    assert!(
        d.step_put(&StepPutParams {
            record: &live,
            fence: &step_fence(&second)
        })
        .await
        .unwrap(),
        "live claim"
    );
    assert!(ack(d, id, &second.by, at(32)).await);
    let late = completed_step_record(second.run_id, "three", serde_json::json!(3), at(33));
    assert!(
        !d.step_put(&StepPutParams {
            record: &late,
            fence: &step_fence(&second)
        })
        .await
        .unwrap(),
        "settled row"
    );
    let names: Vec<_> = list(d, first.run_id)
        .await
        .into_iter()
        .map(|s| (s.name, s.output))
        .collect();
    assert_eq!(
        names,
        vec![
            ("one".to_string(), Some(serde_json::json!(1))),
            ("two".to_string(), Some(serde_json::json!(2))),
        ]
    );
}

/// `step_list` answers one run's steps only, and nothing for a run with none.
pub async fn step_list_is_per_run(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    enqueue_key(d, "a").await;
    enqueue_key(d, "b").await;
    let jobs = claim(d, &claim_params("w1", 2, t0())).await.jobs;
    assert_eq!(jobs.len(), 2);
    for job in &jobs {
        let record =
            completed_step_record(job.run_id, "same-name", serde_json::json!(job.id), at(1));
        assert!(d
            .step_put(&StepPutParams {
                record: &record,
                fence: &step_fence(job)
            })
            .await
            .unwrap());
    }
    for job in &jobs {
        let steps = list(d, job.run_id).await;
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].output, Some(serde_json::json!(job.id)));
    }
    assert!(list(d, Uuid::now_v7()).await.is_empty());
}
