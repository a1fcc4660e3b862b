//! The audit itself: a settle from a process other than the claim's holder is caught, even
//! when it presents the holder's claim identity (which the fence cannot tell apart).

use std::time::Duration;

use jobs::driver::{AckParams, ClaimParams, QueueDemand};

use super::{Chaos, ChaosSteps};
use crate::support::store::Store;

pub async fn a_settle_from_a_process_that_did_not_claim_is_caught(store: &Store) {
    let s = store.schema();
    super::audit::install(store).await;
    let holder = super::audit::driver_as(store, "audit-holder").await;
    let intruder = super::audit::driver_as(store, "audit-intruder").await;
    let jobs = store.jobs();
    ChaosSteps::enqueue(&jobs, Chaos { n: 1 })
        .await
        .expect("enqueue");
    let now = jobs.now();
    let claimed = holder
        .job_claim(&ClaimParams {
            demand: vec![QueueDemand {
                queue: "default".into(),
                limit: 1,
            }],
            worker_id: "w1".into(),
            visibility_timeout: Duration::from_secs(30),
            drop_exhausted: Vec::new(),
            fair_after: String::new(),
            now,
        })
        .await
        .expect("claim")
        .jobs;
    assert_eq!(claimed.len(), 1);
    // The same claim identity, presented from another process: the fence cannot tell, the
    // audit can.
    let landed = intruder
        .job_ack(&AckParams {
            job_id: claimed[0].id,
            by: claimed[0].by.clone(),
            result: None,
            now,
        })
        .await
        .expect("ack");
    assert!(landed);
    let foreign = store
        .count(&format!(
            "select count(*) from {s}.settle_log where kind = 'settle' \
             and claimer_app is distinct from settler_app"
        ))
        .await;
    assert_eq!(foreign, 1, "the audit saw the foreign settle");
}
