//! The Redis audit itself: a write from a process other than the claim's holder is caught,
//! even when it presents the holder's claim identity (which the fence cannot tell apart). The
//! two "processes" are two auditing drivers (`tests/bin/audit_driver.rs`) under two names.

use std::sync::Arc;
use std::time::Duration;

use jobs::driver::{AckParams, ClaimParams, JobDriver, QueueDemand};

use super::invariants;
use super::store::RedisStore;
use crate::audit_driver::AuditDriver;
use crate::chaos::load::Ledger;
use crate::chaos::{Chaos, ChaosSteps};

pub async fn a_write_from_a_process_that_did_not_claim_is_caught() {
    let store = RedisStore::start("chaos_redis_audit").await;
    store.install_audit().await;
    let driver: Arc<dyn JobDriver> = Arc::new(store.driver().clone());
    let as_process =
        |app: &str| AuditDriver::new(driver.clone(), store.pool().clone(), store.schema(), app);
    let (holder, intruder) = (as_process("audit-holder"), as_process("audit-intruder"));
    let jobs = store.jobs();
    let mut ledger = Ledger::default();
    let answer = ChaosSteps::enqueue(&jobs, Chaos { n: 1 })
        .await
        .expect("enqueue");
    ledger.note(1, &answer);
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
    let landed = intruder
        .job_ack(&AckParams {
            job_id: claimed[0].id,
            by: claimed[0].by.clone(),
            result: None,
            now,
        })
        .await
        .expect("ack");
    assert!(landed, "the fence cannot tell the intruder from the holder");
    let (c, _) = invariants::read(&store, &ledger).await;
    assert_eq!((c.claims, c.acks, c.done), (1, 1, 1));
    assert_eq!(c.foreign_writes, 1, "the audit saw the foreign ack");
}
