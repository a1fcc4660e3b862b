//! `queue_next_due`: each queue's earliest run time after `now` among its rows waiting for
//! their time (delayed, ready and backing off, suspended), across tenants and priority
//! classes, which a starting worker arms its due timer with.

use std::sync::Arc;

use super::{at, claim_one, enqueue, nack, nack_params, request, t0, QUEUE};
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::driver::JobDriver;

/// A queue no case enqueues into besides this one.
const OTHER: &str = "conformance-other";

/// Each queue's answer at `now`, sorted by queue.
async fn next_due(driver: &dyn JobDriver, now: Timestamp) -> Vec<(String, Timestamp)> {
    let params = NextDueParams {
        queues: vec![
            QUEUE.to_string(),
            OTHER.to_string(),
            "conformance-empty".to_string(),
        ],
        now,
    };
    let mut dues: Vec<(String, Timestamp)> = driver
        .queue_next_due(&params)
        .await
        .unwrap_or_else(|e| panic!("queue_next_due failed: {e}"))
        .into_iter()
        .map(|d| (d.queue, d.at))
        .collect();
    dues.sort();
    dues
}

/// `queue_next_due` answers each queue's earliest later run time: a parked run, a retry
/// backing off and delayed rows of any tenant and priority class count; a row due now, a
/// running row and another queue's rows do not; a queue with none is left out.
pub async fn queue_next_due_answers_each_queue_s_earliest_later_run_time(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let queue = |at_secs| (QUEUE.to_string(), at(at_secs));
    let other = |at_secs| (OTHER.to_string(), at(at_secs));
    // A parked run (suspended until 10) and a retry backing off (ready again at 20).
    for (key, target, until) in [
        ("parked", NackTarget::Park, at(10)),
        ("retried", NackTarget::Retry, at(20)),
    ] {
        let mut req = request("conformance.job", key);
        req.run_at = at(-1);
        enqueue(d, &req).await;
        let job = claim_one(d, "w1", t0()).await;
        assert!(nack(d, &nack_params(req.id, &job.by, target, until, t0())).await);
    }
    // Delayed rows in three tenants' classes (the earliest in the highest class), one due now,
    // one running, and a delayed row of another queue.
    for (key, tenant, priority, secs) in [
        ("acme-high", Some("acme"), 5, 30),
        ("beta-low", Some("beta"), -3, 40),
        ("acme-plain", Some("acme"), 0, 50),
        ("none-plain", None, 0, 60),
        ("due-now", None, 0, 0),
    ] {
        let mut req = request("conformance.job", key);
        req.tenant_id = tenant.map(str::to_string);
        req.priority = priority;
        req.run_at = at(secs);
        enqueue(d, &req).await;
    }
    let mut running = request("conformance.job", "running");
    running.queue = OTHER.to_string();
    enqueue(d, &running).await;
    let claimed = d
        .job_claim(&ClaimParams {
            demand: vec![QueueDemand {
                queue: OTHER.to_string(),
                limit: 1,
            }],
            ..super::claim_params("w1", 1, t0())
        })
        .await
        .expect("claim");
    assert_eq!(claimed.jobs.len(), 1, "the other queue's running row");
    let mut elsewhere = request("conformance.job", "elsewhere");
    elsewhere.queue = OTHER.to_string();
    elsewhere.run_at = at(5);
    enqueue(d, &elsewhere).await;

    let first = next_due(d, t0()).await;
    assert!(
        !first.is_empty(),
        "driver `{}` answers no next due time: this case needs `JobDriver::queue_next_due`",
        d.name()
    );
    assert_eq!(
        first,
        vec![queue(10), other(5)],
        "the parked run is the queue's earliest; a running row is no due time"
    );
    assert_eq!(
        next_due(d, at(10)).await,
        vec![queue(20)],
        "only times after now: the parked run's and the other queue's are past"
    );
    assert_eq!(
        next_due(d, at(20)).await,
        vec![queue(30)],
        "the highest class"
    );
    assert_eq!(
        next_due(d, at(30)).await,
        vec![queue(40)],
        "another tenant's low class"
    );
    assert_eq!(next_due(d, at(45)).await, vec![queue(50)]);
    assert_eq!(next_due(d, at(55)).await, vec![queue(60)], "no tenant");
    assert_eq!(
        next_due(d, at(60)).await,
        Vec::new(),
        "nothing waits any more"
    );
}
