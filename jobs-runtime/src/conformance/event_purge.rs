//! `event_purge`: expired events go in bounded batches, oldest expiry first; live events stay
//! and are still found by the waits that match them.

use std::sync::Arc;
use std::time::Duration;

use uuid::Uuid;

use super::*;
use crate::driver::{EventFindParams, EventPurgeParams};

/// Publishes `name` under `key` at `t0` for `ttl`.
async fn publish(d: &dyn JobDriver, name: &str, key: &str, ttl: Duration) -> EventId {
    let event = EventPublish {
        id: Uuid::now_v7(),
        name: name.to_string(),
        key: key.to_string(),
        payload: serde_json::json!({ "key": key }),
        ttl,
        now: t0(),
    };
    d.event_publish(&event)
        .await
        .unwrap_or_else(|e| panic!("event_publish failed: {e}"))
}

async fn purge(d: &dyn JobDriver, now: Timestamp, limit: u32) -> u64 {
    d.event_purge(&EventPurgeParams { now, limit })
        .await
        .unwrap_or_else(|e| panic!("event_purge failed: {e}"))
}

/// A wait's line drawn before any publish.
async fn line(d: &dyn JobDriver) -> EventSince {
    EventSince {
        at: t0(),
        mark: d
            .event_mark()
            .await
            .unwrap_or_else(|e| panic!("event_mark failed: {e}")),
    }
}

/// The event `name` under `key` the wait behind `since` finds at `now`.
async fn found(
    d: &dyn JobDriver,
    since: &EventSince,
    (name, key): (&str, &str),
    now: Timestamp,
) -> Option<EventId> {
    d.event_find(&EventFindParams {
        name,
        key,
        since,
        now,
    })
    .await
    .unwrap_or_else(|e| panic!("event_find failed: {e}"))
    .map(|e| e.id)
}

/// Events whose expiry has passed go; the ones still live stay, findable as before. An event
/// expiring exactly at `now` has expired (a wait no longer matches it).
pub async fn event_purge_deletes_expired_events_and_keeps_live_ones(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let since = line(d).await;
    // All published at t0, so no publish can have swept any of them already.
    for i in 0..3 {
        publish(
            d,
            "order.shipped",
            &format!("short-{i}"),
            Duration::from_secs(10),
        )
        .await;
    }
    let edge = publish(d, "order.shipped", "edge", Duration::from_secs(60)).await;
    let live = publish(d, "order.shipped", "live", Duration::from_secs(3600)).await;

    assert_eq!(
        purge(d, at(5), 100).await,
        0,
        "nothing has expired at t0+5s"
    );
    assert_eq!(
        found(d, &since, ("order.shipped", "edge"), at(5)).await,
        Some(edge)
    );

    assert_eq!(
        purge(d, at(60), 100).await,
        4,
        "the three 10 s events and the one expiring exactly now"
    );
    assert_eq!(
        purge(d, at(60), 100).await,
        0,
        "a second pass finds nothing"
    );
    assert_eq!(
        found(d, &since, ("order.shipped", "edge"), at(5)).await,
        None
    );
    assert_eq!(
        found(d, &since, ("order.shipped", "short-0"), at(5)).await,
        None
    );
    assert_eq!(
        found(d, &since, ("order.shipped", "live"), at(60)).await,
        Some(live),
        "a live event is never purged"
    );
}

/// One purge deletes at most `limit` events, the earliest expiry first.
pub async fn event_purge_is_bounded_by_its_limit(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let since = line(d).await;
    // Published in the reverse of their expiry order.
    for secs in [50u64, 40, 30, 20, 10] {
        publish(d, "tick", &format!("k{secs}"), Duration::from_secs(secs)).await;
    }
    assert_eq!(purge(d, at(100), 2).await, 2);
    assert_eq!(
        found(d, &since, ("tick", "k10"), at(0)).await,
        None,
        "earliest first"
    );
    assert_eq!(
        found(d, &since, ("tick", "k20"), at(0)).await,
        None,
        "earliest first"
    );
    assert!(found(d, &since, ("tick", "k30"), at(0)).await.is_some());
    assert_eq!(purge(d, at(100), 2).await, 2);
    assert_eq!(purge(d, at(100), 2).await, 1);
    assert_eq!(purge(d, at(100), 2).await, 0);
}
