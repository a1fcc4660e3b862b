//! The webhook endpoint ledger: failure runs that a delivered attempt resets, disabling and
//! re-enabling, attempts newest first, no count lost under concurrent records, and the purge of
//! old attempts that keeps every endpoint's standing.

use std::sync::Arc;
use std::time::Duration;

use super::t0;
use crate::clock::{add, Timestamp};
use crate::driver::webhook_ledger::{
    AttemptsPurgeParams, EndpointStanding, WebhookAttempt, WebhookLedger,
};
use crate::driver::JobDriver;

fn ledger(driver: &dyn JobDriver) -> &dyn WebhookLedger {
    driver.webhook_ledger().unwrap_or_else(|| {
        panic!(
            "driver `{}` has no webhook ledger: the webhook ledger cases need one",
            driver.name()
        )
    })
}

fn attempt(endpoint: &str, event: &str, at: Timestamp, status: Option<u16>) -> WebhookAttempt {
    let delivered = status.is_some_and(|s| (200..300).contains(&s));
    WebhookAttempt {
        endpoint_id: endpoint.into(),
        event_id: event.into(),
        topic: "order.paid".into(),
        at,
        status,
        delivered,
        error_code: (!delivered).then(|| "X_WEBHOOK_DELIVERY_FAILED".to_string()),
    }
}

fn minutes(n: u64) -> Timestamp {
    add(t0(), Duration::from_secs(60 * n))
}

/// `record` adds one to an endpoint's failure run per failed attempt and a delivered one resets
/// it; `attempts` answers the latest first, bounded, each as recorded; endpoints are apart.
pub async fn webhook_record_moves_the_failure_run_per_endpoint(driver: Arc<dyn JobDriver>) {
    let ledger = ledger(driver.as_ref());
    assert_eq!(
        ledger.standing("ep_a").await.unwrap(),
        EndpointStanding::default()
    );
    for (i, status) in [Some(500), None, Some(503)].into_iter().enumerate() {
        let standing = ledger
            .record(&attempt(
                "ep_a",
                &format!("evt_{i}"),
                minutes(i as u64),
                status,
            ))
            .await
            .unwrap();
        assert_eq!(standing.consecutive_failures, i as u32 + 1);
        assert!(!standing.disabled);
    }
    ledger
        .record(&attempt("ep_b", "evt_b", minutes(1), Some(500)))
        .await
        .unwrap();
    let delivered = ledger
        .record(&attempt("ep_a", "evt_3", minutes(3), Some(204)))
        .await
        .unwrap();
    assert_eq!(delivered, EndpointStanding::default());
    assert_eq!(
        ledger.standing("ep_b").await.unwrap().consecutive_failures,
        1
    );

    let latest = ledger.attempts("ep_a", 2).await.unwrap();
    assert_eq!(
        latest,
        vec![
            attempt("ep_a", "evt_3", minutes(3), Some(204)),
            attempt("ep_a", "evt_2", minutes(2), Some(503)),
        ]
    );
    let all = ledger.attempts("ep_a", 100).await.unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(
        all[2].status, None,
        "an attempt never answered has no status"
    );
    assert!(ledger.attempts("ep_unknown", 10).await.unwrap().is_empty());
}

/// `disable` refuses the endpoint until `enable`, which also resets its failure run; a record
/// while disabled keeps it disabled; both verbs are idempotent and take unknown endpoints.
pub async fn webhook_disable_holds_until_enable(driver: Arc<dyn JobDriver>) {
    let ledger = ledger(driver.as_ref());
    for i in 0..3 {
        ledger
            .record(&attempt("ep", &format!("evt_{i}"), minutes(i), Some(500)))
            .await
            .unwrap();
    }
    ledger.disable("ep", minutes(3)).await.unwrap();
    ledger.disable("ep", minutes(4)).await.unwrap();
    assert!(ledger.is_disabled("ep").await.unwrap());
    let after = ledger
        .record(&attempt("ep", "evt_late", minutes(5), Some(500)))
        .await
        .unwrap();
    assert_eq!(
        after,
        EndpointStanding {
            consecutive_failures: 4,
            disabled: true
        }
    );

    ledger.enable("ep").await.unwrap();
    assert_eq!(
        ledger.standing("ep").await.unwrap(),
        EndpointStanding::default()
    );
    ledger.enable("ep").await.unwrap();
    ledger.enable("ep_never_seen").await.unwrap();
    assert!(!ledger.is_disabled("ep_never_seen").await.unwrap());
    // An endpoint disabled before any attempt (by the app) is refused too.
    ledger.disable("ep_fresh", minutes(0)).await.unwrap();
    assert!(ledger.is_disabled("ep_fresh").await.unwrap());
    assert_eq!(
        ledger
            .standing("ep_fresh")
            .await
            .unwrap()
            .consecutive_failures,
        0
    );
}

/// Records racing on one endpoint lose no count: 24 failed attempts from 8 tasks leave a run
/// of 24 and 24 attempts.
pub async fn webhook_record_loses_no_count_under_concurrent_records(driver: Arc<dyn JobDriver>) {
    let mut tasks = Vec::new();
    for task in 0..8 {
        let driver = driver.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..3 {
                ledger(driver.as_ref())
                    .record(&attempt("ep", &format!("evt_{task}_{i}"), minutes(i), None))
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let ledger = ledger(driver.as_ref());
    assert_eq!(
        ledger.standing("ep").await.unwrap().consecutive_failures,
        24
    );
    assert_eq!(ledger.attempts("ep", 100).await.unwrap().len(), 24);
}

/// `attempts_purge` deletes attempts sent before its instant, at most `limit` a call, oldest
/// first, and keeps newer attempts and every endpoint's standing.
pub async fn webhook_attempts_purge_deletes_old_attempts_in_bounded_batches(
    driver: Arc<dyn JobDriver>,
) {
    let ledger = ledger(driver.as_ref());
    for (endpoint, at) in [("ep_a", 0), ("ep_a", 10), ("ep_b", 20), ("ep_a", 120)] {
        ledger
            .record(&attempt(
                endpoint,
                &format!("evt_{at}"),
                minutes(at),
                Some(500),
            ))
            .await
            .unwrap();
    }
    let params = AttemptsPurgeParams {
        before: minutes(60),
        limit: 2,
    };
    assert_eq!(ledger.attempts_purge(&params).await.unwrap(), 2);
    assert_eq!(ledger.attempts_purge(&params).await.unwrap(), 1);
    assert_eq!(ledger.attempts_purge(&params).await.unwrap(), 0);
    let kept = ledger.attempts("ep_a", 10).await.unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].event_id, "evt_120");
    assert!(ledger.attempts("ep_b", 10).await.unwrap().is_empty());
    assert_eq!(
        ledger.standing("ep_a").await.unwrap().consecutive_failures,
        3
    );
    assert_eq!(
        ledger.standing("ep_b").await.unwrap().consecutive_failures,
        1
    );
}
