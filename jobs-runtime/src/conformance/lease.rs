//! The lease store: grants, fences, renewals, releases, holders, and no over-grant under
//! concurrent acquirers.

use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{at, t0};
use crate::driver::lease::{HeldLease, LeaseAcquire, LeaseStore};
use crate::driver::lease::{LeaseHoldersParams, LeaseRenewParams};
use crate::driver::JobDriver;

const TTL: Duration = Duration::from_secs(30);

fn ask(key: &str, limit: u32, holder: &str, now_secs: i64) -> LeaseAcquire {
    LeaseAcquire {
        key: key.to_string(),
        limit,
        ttl: TTL,
        holder: holder.to_string(),
        now: at(now_secs),
    }
}

/// The lease store: a driver without one fails these cases loudly, never skips them.
fn store(driver: &dyn JobDriver) -> &dyn LeaseStore {
    driver.lease_store().unwrap_or_else(|| {
        panic!(
            "driver `{}` has no lease store: the lease cases need one",
            driver.name()
        )
    })
}

async fn grant(store: &dyn LeaseStore, params: &LeaseAcquire) -> HeldLease {
    store
        .lease_acquire(params)
        .await
        .expect("acquire")
        .expect("a free slot")
}

/// `lease_acquire` grants the lowest free slots up to the limit, then refuses; every grant's
/// fence is larger than every earlier one, across keys.
pub async fn lease_acquire_grants_up_to_the_limit_with_increasing_fences(
    driver: Arc<dyn JobDriver>,
) {
    let store = store(&*driver);
    let a = grant(store, &ask("job:sync", 2, "w1", 0)).await;
    let b = grant(store, &ask("job:sync", 2, "w2", 0)).await;
    assert_eq!((a.slot, b.slot), (0, 1));
    assert!(b.fence > a.fence);
    assert_eq!(a.expires_at, at(30));
    assert_eq!(
        store
            .lease_acquire(&ask("job:sync", 2, "w3", 0))
            .await
            .unwrap(),
        None,
        "both slots are held"
    );
    let other = grant(store, &ask("lock:report", 1, "w3", 0)).await;
    assert!(other.fence > b.fence, "one sequence across keys");
}

/// A lapsed grant frees its slot: the next holder takes it with a new fence, and the old grant
/// can neither renew nor release it.
pub async fn lease_acquire_takes_over_a_lapsed_slot(driver: Arc<dyn JobDriver>) {
    let store = store(&*driver);
    let old = grant(store, &ask("job:sync", 1, "dead-worker", 0)).await;
    assert_eq!(
        store
            .lease_acquire(&ask("job:sync", 1, "w2", 29))
            .await
            .unwrap(),
        None
    );
    let new = grant(store, &ask("job:sync", 1, "w2", 30)).await;
    assert_eq!(new.slot, old.slot);
    assert!(new.fence > old.fence);
    assert_eq!(
        store
            .lease_renew(&LeaseRenewParams {
                lease: &old,
                ttl: TTL,
                now: at(31)
            })
            .await
            .unwrap(),
        None
    );
    assert!(!store.lease_release(&old).await.unwrap());
    let holders = store
        .lease_holders(&LeaseHoldersParams {
            key: "job:sync",
            now: at(31),
        })
        .await
        .unwrap();
    assert_eq!(holders, vec![new]);
}

/// `lease_renew` extends a live grant; `lease_release` frees the slot for the next acquirer.
pub async fn lease_renew_extends_and_release_frees(driver: Arc<dyn JobDriver>) {
    let store = store(&*driver);
    let lease = grant(store, &ask("job:sync", 1, "w1", 0)).await;
    let renewed = store
        .lease_renew(&LeaseRenewParams {
            lease: &lease,
            ttl: TTL,
            now: at(20),
        })
        .await
        .unwrap()
        .expect("still held");
    assert_eq!(renewed.expires_at, at(50));
    assert_eq!(renewed.fence, lease.fence, "a renewal keeps the fence");
    assert_eq!(
        store
            .lease_acquire(&ask("job:sync", 1, "w2", 40))
            .await
            .unwrap(),
        None,
        "renewed past the first TTL"
    );
    assert!(store.lease_release(&renewed).await.unwrap());
    assert!(
        !store.lease_release(&renewed).await.unwrap(),
        "already gone"
    );
    assert!(store
        .lease_holders(&LeaseHoldersParams {
            key: "job:sync",
            now: at(40)
        })
        .await
        .unwrap()
        .is_empty());
    grant(store, &ask("job:sync", 1, "w2", 40)).await;
}

/// `lease_holders` lists the live grants of one key in slot order, not lapsed ones and not
/// other keys'.
pub async fn lease_holders_lists_live_grants_in_slot_order(driver: Arc<dyn JobDriver>) {
    let store = store(&*driver);
    let a = grant(store, &ask("job-key:sync:acct-1", 3, "w1", 0)).await;
    let b = grant(store, &ask("job-key:sync:acct-1", 3, "w2", 10)).await;
    grant(store, &ask("job-key:sync:acct-2", 3, "w3", 0)).await;
    assert_eq!(
        store
            .lease_holders(&LeaseHoldersParams {
                key: "job-key:sync:acct-1",
                now: at(5)
            })
            .await
            .unwrap(),
        vec![a.clone(), b.clone()]
    );
    assert_eq!(
        store
            .lease_holders(&LeaseHoldersParams {
                key: "job-key:sync:acct-1",
                now: at(35)
            })
            .await
            .unwrap(),
        vec![b],
        "a lapsed at 30"
    );
}

/// Many concurrent acquirers on one key never hold more than its limit at once, and every
/// grant's fence is distinct.
pub async fn lease_acquire_never_over_grants_under_concurrent_acquirers(
    driver: Arc<dyn JobDriver>,
) {
    store(&*driver);
    const LIMIT: u32 = 3;
    let holding = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let grants = Arc::new(AtomicU32::new(0));
    let last_fence = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for worker in 0..12 {
        let driver = driver.clone();
        let (holding, most, grants, last_fence) = (
            holding.clone(),
            most.clone(),
            grants.clone(),
            last_fence.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let store = driver.lease_store().expect("checked above");
            for round in 0..25 {
                let params = ask("job:stress", LIMIT, &format!("w{worker}-{round}"), 0);
                let Some(lease) = store.lease_acquire(&params).await.expect("acquire") else {
                    tokio::task::yield_now().await;
                    continue;
                };
                let now = holding.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                grants.fetch_add(1, Ordering::SeqCst);
                last_fence.fetch_max(lease.fence, Ordering::SeqCst);
                tokio::task::yield_now().await;
                holding.fetch_sub(1, Ordering::SeqCst);
                assert!(store.lease_release(&lease).await.expect("release"));
            }
        }));
    }
    for task in tasks {
        task.await.expect("acquirer");
    }
    let most = most.load(Ordering::SeqCst);
    assert!(
        most <= LIMIT,
        "{most} holders at once over a limit of {LIMIT}"
    );
    assert!(grants.load(Ordering::SeqCst) > 0);
    let holders = driver
        .lease_store()
        .unwrap()
        .lease_holders(&LeaseHoldersParams {
            key: "job:stress",
            now: t0(),
        })
        .await
        .unwrap();
    assert!(holders.is_empty(), "every grant was released");
}
