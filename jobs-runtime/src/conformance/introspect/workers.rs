//! The worker registry: rows expire one ttl past their last heartbeat, carry a bounded list of
//! in-flight ids and the settings their workers announce, and go when forgotten.

use super::*;

/// Worker rows live one ttl past their last heartbeat, carry at most 100 in-flight ids and the
/// settings their workers announce (their fleet-wide queue limits), and go when forgotten.
pub async fn worker_rows_expire_and_are_forgotten(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    let in_flight: Vec<JobId> = (0..150).map(|_| Uuid::now_v7()).collect();
    let limited = WorkerSettings {
        queue_limits: vec![
            WorkerQueueLimits {
                queue: "email".into(),
                concurrency: Some(10),
                rate: Some(WorkerQueueRate {
                    limit: 100,
                    per_ms: 60_000,
                }),
            },
            WorkerQueueLimits {
                queue: QUEUE.into(),
                concurrency: None,
                rate: Some(WorkerQueueRate {
                    limit: 5,
                    per_ms: 1,
                }),
            },
        ],
    };
    let announce = |id: &str, now| WorkerAnnounce {
        id: id.to_string(),
        host: "host-a".into(),
        started_at: t0(),
        queues: vec![QUEUE.into(), "email".into()],
        slots: 16,
        in_flight: in_flight.clone(),
        in_flight_count: 150,
        settings: if id == "w1" {
            limited.clone()
        } else {
            WorkerSettings::default()
        },
        ttl: VISIBILITY,
        now,
    };
    p.worker_announce(&announce("w1", t0())).await.unwrap();
    p.worker_announce(&announce("w2", at(10))).await.unwrap();
    let rows = p
        .worker_list(&WorkerListParams { now: at(20) })
        .await
        .unwrap();
    assert_eq!(
        rows.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        ["w1", "w2"]
    );
    let w1 = &rows[0];
    assert_eq!(w1.in_flight.len(), MAX_WORKER_IN_FLIGHT);
    assert_eq!(w1.in_flight[..], in_flight[..MAX_WORKER_IN_FLIGHT]);
    assert_eq!(w1.in_flight_count, 150);
    assert_eq!((w1.heartbeat_at, w1.expires_at), (t0(), at(30)));
    assert_eq!(w1.queues, [QUEUE, "email"]);
    assert_eq!(w1.settings, limited, "the announced settings round-trip");
    assert_eq!(rows[1].settings, WorkerSettings::default());
    assert_eq!(
        (w1.slots, w1.host.as_str(), w1.started_at),
        (16, "host-a", t0())
    );
    let rows = p
        .worker_list(&WorkerListParams { now: at(30) })
        .await
        .unwrap();
    assert_eq!(
        rows.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        ["w2"],
        "w1 expired one ttl after its heartbeat"
    );
    p.worker_announce(&announce("w1", at(30))).await.unwrap();
    p.worker_forget(&WorkerForgetParams { id: "w2" })
        .await
        .unwrap();
    let rows = p
        .worker_list(&WorkerListParams { now: at(31) })
        .await
        .unwrap();
    assert_eq!(
        rows.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        ["w1"]
    );
}
