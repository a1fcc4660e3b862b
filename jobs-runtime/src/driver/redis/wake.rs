//! The push wake: an enqueue that leaves a job due now publishes its queue's name on the
//! store's wake channel (`lua/enqueue.lua`), a delayed enqueue and a nack to a later run time
//! (a retry, a park: `lua/settle.lua`) publish `@<run_at>:<queue>` (`driver/wake_payload.rs`),
//! and each worker process subscribes to it, so an
//! idle worker claims at once instead of at its next poll. Plain Pub/Sub reaches every node of
//! a cluster, so one subscription on any node hears every queue. A lost subscription is
//! reported (`Lost`: the worker polls on its shorter ceiling) and made again with a backoff.

use std::time::Duration;

use futures::StreamExt;

use crate::driver::{WakeReceiver, WakeSignal};
use crate::error::JobError;

/// The longest pause between two attempts to subscribe again.
const RESUBSCRIBE_MAX: Duration = Duration::from_secs(5);

/// Starts the subscriber; it ends when the receiver is dropped.
pub(super) async fn listen(nodes: Vec<String>, channel: String) -> Result<WakeReceiver, JobError> {
    let (tx, rx) = tokio::sync::mpsc::channel(256);
    tokio::spawn(async move {
        let mut pause = Duration::from_millis(50);
        loop {
            for node in &nodes {
                let Ok(client) = redis::Client::open(node.as_str()) else {
                    continue;
                };
                let Ok(mut pubsub) = client.get_async_pubsub().await else {
                    continue;
                };
                if pubsub.subscribe(&channel).await.is_err() {
                    continue;
                }
                pause = Duration::from_millis(50);
                if tx.send(WakeSignal::Live).await.is_err() {
                    return;
                }
                let mut messages = pubsub.on_message();
                while let Some(message) = messages.next().await {
                    let Ok(payload) = message.get_payload::<String>() else {
                        continue;
                    };
                    let signal = crate::driver::wake_payload::signal(&payload);
                    if tx.send(signal).await.is_err() {
                        return;
                    }
                }
                if tx.send(WakeSignal::Lost).await.is_err() {
                    return;
                }
            }
            if tx.is_closed() {
                return;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RESUBSCRIBE_MAX);
        }
    });
    Ok(rx)
}
