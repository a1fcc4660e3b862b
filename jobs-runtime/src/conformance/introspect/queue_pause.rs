//! Pausing a queue: no claim from it from the next claim on, enqueues still land, the pause
//! keeps who paused it.

use super::*;

/// A paused queue is claimed by no one from the next claim on; enqueues still land; the pause
/// keeps who paused it; resume answers whether it was paused.
pub async fn queue_pause_stops_the_next_claim(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let p = port(d);
    p.queue_pause(&QueuePauseParams {
        queue: QUEUE,
        actor: Some("ops@example.com"),
        now: at(1),
    })
    .await
    .unwrap();
    p.queue_pause(&QueuePauseParams {
        queue: QUEUE,
        actor: Some("someone-else"),
        now: at(2),
    })
    .await
    .unwrap();
    let id = enqueue_key(d, "k").await;
    claim_none(d, "w1", at(3)).await;
    assert_eq!(
        p.queue_paused().await.unwrap(),
        [QueuePause {
            queue: QUEUE.into(),
            paused_at: at(1),
            paused_by: Some("ops@example.com".into()),
        }],
        "the first pause's time and actor stay"
    );
    assert!(p
        .queue_resume(&QueueResumeParams {
            queue: QUEUE,
            now: at(4)
        })
        .await
        .unwrap());
    assert!(!p
        .queue_resume(&QueueResumeParams {
            queue: QUEUE,
            now: at(4)
        })
        .await
        .unwrap());
    assert!(p.queue_paused().await.unwrap().is_empty());
    assert_eq!(claim_one(d, "w1", at(5)).await.id, id);
}
