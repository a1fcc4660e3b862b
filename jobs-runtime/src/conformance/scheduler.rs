//! The scheduler store: who leads, since when, and the lease's lapse.

use std::time::Duration;

use super::{at, t0};
use crate::driver::scheduler_store::{
    SchedulerLeadParams, SchedulerLeader, SchedulerLeaderParams, SchedulerResignParams,
    SchedulerStore,
};
use crate::driver::JobDriver;

const TTL: Duration = Duration::from_secs(30);

fn store(driver: &dyn JobDriver) -> &dyn SchedulerStore {
    driver.scheduler_store().unwrap_or_else(|| {
        panic!(
            "driver `{}` has no scheduler store: the scheduler cases need one",
            driver.name()
        )
    })
}

async fn lead(store: &dyn SchedulerStore, holder: &str, now_secs: i64) -> bool {
    store
        .scheduler_lead(&SchedulerLeadParams {
            holder: holder.to_string(),
            ttl: TTL,
            now: at(now_secs),
        })
        .await
        .expect("lead")
}

async fn leader(store: &dyn SchedulerStore, now_secs: i64) -> Option<SchedulerLeader> {
    store
        .scheduler_leader(&SchedulerLeaderParams { now: at(now_secs) })
        .await
        .expect("leader")
}

/// `scheduler_leader` names the holder and when it took the lease: renewals keep `since`, a
/// takeover after the lapse resets it, and a resigned or lapsed lease names nobody.
pub async fn scheduler_leader_names_the_holder_since_it_took_the_lease(
    driver: std::sync::Arc<dyn JobDriver>,
) {
    let store = store(driver.as_ref());
    assert_eq!(leader(store, 0).await, None, "nobody leads a new store");
    assert!(lead(store, "a", 0).await);
    assert!(lead(store, "a", 10).await, "a renewal");
    assert!(!lead(store, "b", 20).await, "a's lease holds");
    assert_eq!(
        leader(store, 20).await,
        Some(SchedulerLeader {
            holder: "a".into(),
            since: t0(),
            expires_at: at(40),
        }),
        "since stays at the first grant; the expiry follows the renewal"
    );
    assert_eq!(leader(store, 40).await, None, "a lapsed lease names nobody");
    assert!(lead(store, "b", 41).await, "b takes the lapsed lease");
    let b = leader(store, 41).await.expect("b leads");
    assert_eq!((b.holder.as_str(), b.since), ("b", at(41)));
    store
        .scheduler_resign(&SchedulerResignParams {
            holder: "b".into(),
            now: at(42),
        })
        .await
        .expect("resign");
    assert_eq!(
        leader(store, 42).await,
        None,
        "a resigned lease names nobody"
    );
}

/// A task's fire inserts each job with the priority its request carries (the job's declared
/// one, or the default), as an enqueue does: the fire's jobs are claimed in that order.
pub async fn scheduler_fire_carries_each_job_s_priority(driver: std::sync::Arc<dyn JobDriver>) {
    use crate::driver::scheduler_store::TaskFireParams;
    use crate::driver::MAX_PRIORITY;

    let store = store(driver.as_ref());
    let mut plain = super::request("conformance.job", "fire-plain");
    plain.run_at = at(5);
    plain.now = at(5);
    let mut urgent = super::request("conformance.job", "fire-urgent");
    urgent.priority = MAX_PRIORITY;
    urgent.run_at = at(5);
    urgent.now = at(5);
    let fired = store
        .task_fire(&TaskFireParams {
            task: "conformance.task".into(),
            expected: None,
            watermark: at(5),
            occurrence: Some(at(5)),
            jobs: vec![plain.clone(), urgent.clone()],
            now: at(5),
        })
        .await
        .expect("fire");
    assert!(fired.fired, "the watermark moved");
    assert_eq!(
        super::get(driver.as_ref(), urgent.id).await.priority,
        MAX_PRIORITY
    );
    assert_eq!(super::get(driver.as_ref(), plain.id).await.priority, 0);
    let first = super::claim_one(driver.as_ref(), "w1", at(6)).await;
    assert_eq!(
        first.id, urgent.id,
        "the fire's higher priority is claimed first"
    );
}
