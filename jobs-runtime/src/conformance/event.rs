//! `event_mark` / `event_publish` / `event_find`: a wait's line, keys and names, order, and the
//! wake of a parked run.

use std::sync::Arc;

use uuid::Uuid;

use super::*;
use crate::driver::{EventFindParams, StepListParams, StepPutParams};

fn event(name: &str, key: &str, payload: serde_json::Value, now: Timestamp) -> EventPublish {
    EventPublish {
        id: Uuid::now_v7(),
        name: name.to_string(),
        key: key.to_string(),
        payload,
        ttl: DEFAULT_EVENT_TTL,
        now,
    }
}

async fn publish(d: &dyn JobDriver, event: &EventPublish) {
    let id = d
        .event_publish(event)
        .await
        .unwrap_or_else(|e| panic!("event_publish failed: {e}"));
    assert_eq!(id, event.id, "a publish answers the event's id");
}

async fn since(d: &dyn JobDriver, now: Timestamp) -> EventSince {
    EventSince {
        at: now,
        mark: d
            .event_mark()
            .await
            .unwrap_or_else(|e| panic!("event_mark failed: {e}")),
    }
}

async fn find(d: &dyn JobDriver, name: &str, key: &str, since: &EventSince) -> Option<JobEvent> {
    d.event_find(&EventFindParams {
        name,
        key,
        since,
        now: since.at,
    })
    .await
    .unwrap_or_else(|e| panic!("event_find failed: {e}"))
}

/// An event published under the wait's name and key after its mark is found, payload intact.
pub async fn event_find_matches_an_event_published_after_the_mark(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let line = since(d, t0()).await;
    assert_eq!(find(d, "invoice.paid", "inv-1", &line).await, None);
    let paid = event(
        "invoice.paid",
        "inv-1",
        serde_json::json!({ "amount": 42 }),
        at(5),
    );
    publish(d, &paid).await;
    let found = find(d, "invoice.paid", "inv-1", &line)
        .await
        .expect("the event");
    assert_eq!(
        found,
        JobEvent {
            id: paid.id,
            name: "invoice.paid".into(),
            key: "inv-1".into(),
            payload: serde_json::json!({ "amount": 42 }),
            published_at: at(5),
        }
    );
}

/// An event matches only until it expires (its publish time plus its ttl).
pub async fn event_find_ignores_an_expired_event(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let line = since(d, t0()).await;
    let mut short = event("invoice.paid", "inv-9", serde_json::json!(1), at(5));
    short.ttl = std::time::Duration::from_secs(10);
    publish(d, &short).await;
    let find = |now| EventFindParams {
        name: "invoice.paid",
        key: "inv-9",
        since: &line,
        now,
    };
    assert!(
        d.event_find(&find(at(14))).await.unwrap().is_some(),
        "alive at 14 s"
    );
    assert_eq!(
        d.event_find(&find(at(15))).await.unwrap(),
        None,
        "expired at 15 s"
    );
}

/// An event published before the wait's mark is not the wait's, even under its name and key.
pub async fn event_find_ignores_an_event_published_before_the_mark(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    publish(
        d,
        &event("invoice.paid", "inv-1", serde_json::json!(1), t0()),
    )
    .await;
    let line = since(d, at(1)).await;
    assert_eq!(find(d, "invoice.paid", "inv-1", &line).await, None);
    let after = event("invoice.paid", "inv-1", serde_json::json!(2), at(2));
    publish(d, &after).await;
    assert_eq!(
        find(d, "invoice.paid", "inv-1", &line).await.map(|e| e.id),
        Some(after.id)
    );
}

/// Another correlation key, or another event name, does not match.
pub async fn event_find_ignores_another_key_or_name(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let line = since(d, t0()).await;
    publish(
        d,
        &event("invoice.paid", "inv-2", serde_json::json!(1), at(1)),
    )
    .await;
    publish(
        d,
        &event("invoice.voided", "inv-1", serde_json::json!(1), at(1)),
    )
    .await;
    assert_eq!(find(d, "invoice.paid", "inv-1", &line).await, None);
    assert!(find(d, "invoice.paid", "inv-2", &line).await.is_some());
    assert!(find(d, "invoice.voided", "inv-1", &line).await.is_some());
}

/// Of several matching events after the mark, the first published is the wait's.
pub async fn event_find_answers_the_first_event_after_the_mark(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let line = since(d, t0()).await;
    let first = event("invoice.paid", "inv-1", serde_json::json!("first"), at(1));
    let second = event("invoice.paid", "inv-1", serde_json::json!("second"), at(2));
    publish(d, &first).await;
    publish(d, &second).await;
    let found = find(d, "invoice.paid", "inv-1", &line)
        .await
        .expect("an event");
    assert_eq!(found.payload, serde_json::json!("first"));
    assert_eq!(found.id, first.id);
}

/// A publish wakes the suspended runs waiting on its name and key (their `run_at` moves to the
/// publish time, so the next claim takes them) and leaves other waits parked.
pub async fn event_publish_wakes_a_suspended_job_waiting_on_it(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let waiting = enqueue_key(d, "waiting").await;
    let other = enqueue_key(d, "other-key").await;
    let jobs = claim(d, &claim_params("w1", 2, t0())).await.jobs;
    assert_eq!(jobs.len(), 2);
    for job in &jobs {
        let key = if job.id == waiting { "inv-1" } else { "inv-2" };
        let wait = StepRecord {
            run_id: job.run_id,
            name: "wait:invoice.paid".into(),
            status: StepStatus::Waiting,
            output: None,
            error: None,
            attempts: 1,
            wake_at: None,
            wait: Some(WaitSpec {
                event: "invoice.paid".into(),
                key: key.into(),
                deadline: at(3600),
                since: since(d, at(1)).await,
            }),
            updated_at: at(1),
        };
        let fence = StepFence {
            job_id: job.id,
            by: job.by.clone(),
        };
        assert!(d
            .step_put(&StepPutParams {
                record: &wait,
                fence: &fence
            })
            .await
            .unwrap());
        let mut park = nack_params(job.id, &job.by, NackTarget::Park, at(31), at(1));
        park.counts_as_attempt = false;
        park.error = None;
        park.error_code = None;
        assert!(nack(d, &park).await);
    }
    claim_none(d, "w1", at(5)).await;

    publish(
        d,
        &event(
            "invoice.paid",
            "inv-1",
            serde_json::json!({ "amount": 7 }),
            at(5),
        ),
    )
    .await;
    let woken = get(d, waiting).await;
    assert_eq!(woken.state, JobState::Suspended);
    assert_eq!(
        woken.run_at,
        at(5),
        "the publish moved the wait's run_at to now"
    );
    assert_eq!(
        get(d, other).await.run_at,
        at(31),
        "another key stays parked"
    );
    let resumed = claim_one(d, "w1", at(5)).await;
    assert_eq!(resumed.id, waiting);
    assert_eq!(resumed.attempt, 1);
    let wait = d
        .step_list(&StepListParams {
            run_id: resumed.run_id,
        })
        .await
        .unwrap()
        .remove(0)
        .wait
        .unwrap();
    let found = find(d, "invoice.paid", "inv-1", &wait.since)
        .await
        .expect("the wait's event");
    assert_eq!(found.payload, serde_json::json!({ "amount": 7 }));
}
