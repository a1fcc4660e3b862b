//! LISTEN/NOTIFY wake: one LISTEN session per worker, forwarding the queue names that enqueues
//! announce, and the due times that delayed enqueues, retries and parks announce
//! (`@<microseconds>:<queue>`, read by `driver/wake_payload.rs`). The wake is an optimisation and the poll stays the guarantee: notifications are
//! lost with their session, so every re-dial is un-proven until a probe sent through the pool
//! comes back on the LISTEN session.

use std::time::Duration;

use sqlx::postgres::{PgListener, PgPool};
use tokio::sync::mpsc;

use super::sql::safe;
use crate::driver::WakeSignal;

/// Probes carry this prefix; a queue name never starts with it.
const PROBE_PREFIX: &str = ":probe:";
/// How long a probe may take to come back before the wake is reported unverified.
const PROBE_PATIENCE: Duration = Duration::from_secs(5);
/// The wait before re-dialling a LISTEN session that failed.
const REDIAL_AFTER: Duration = Duration::from_secs(1);

/// The wake channel of a schema: every enqueue into the schema announces its queue there.
pub(crate) fn channel(schema: &str) -> String {
    format!("x_jobs_wake:{schema}")
}

pub(crate) fn spawn(pool: PgPool, channel: String) -> mpsc::Receiver<WakeSignal> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        tokio::select! {
            _ = tx.closed() => {}
            _ = listen(&pool, &channel, &tx) => {}
        }
    });
    rx
}

async fn listen(pool: &PgPool, channel: &str, tx: &mpsc::Sender<WakeSignal>) {
    let mut warned = false;
    loop {
        let mut listener = match dial(pool, channel).await {
            Ok(listener) => listener,
            Err(error) => {
                tracing::warn!(target: "jobs.wake.unavailable", %error, "the LISTEN session could not be opened; polling only");
                let _ = tx.send(WakeSignal::Lost).await;
                tokio::time::sleep(REDIAL_AFTER).await;
                continue;
            }
        };
        let mut probe = send_probe(pool, channel).await;
        let mut probe_deadline = Some(tokio::time::Instant::now() + PROBE_PATIENCE);
        loop {
            let received = match probe_deadline {
                Some(deadline) => {
                    tokio::select! {
                        r = listener.try_recv() => r,
                        _ = tokio::time::sleep_until(deadline) => {
                            if !warned {
                                warned = true;
                                tracing::warn!(
                                    target: "jobs.wake.unverified",
                                    "a wake probe did not come back on the LISTEN session; the worker keeps its short idle poll. Give workers a direct or session-pooled DATABASE_URL (PgBouncer transaction pooling delivers no notifications)"
                                );
                            }
                            probe_deadline = None;
                            continue;
                        }
                    }
                }
                None => listener.try_recv().await,
            };
            match received {
                Ok(Some(note)) => {
                    let payload = note.payload();
                    if Some(payload) == probe.as_deref() {
                        probe = None;
                        probe_deadline = None;
                        tracing::info!(target: "jobs.wake.live", "the wake is proven");
                        if tx.send(WakeSignal::Live).await.is_err() {
                            return;
                        }
                    } else if !payload.starts_with(PROBE_PREFIX)
                        && tx
                            .send(super::super::wake_payload::signal(payload))
                            .await
                            .is_err()
                    {
                        return;
                    }
                }
                Ok(None) => {
                    // The session dropped; sqlx re-dials and re-listens on the next call. Until a
                    // new probe comes back, the wake is not live.
                    if tx.send(WakeSignal::Lost).await.is_err() {
                        return;
                    }
                    probe = send_probe(pool, channel).await;
                    probe_deadline = Some(tokio::time::Instant::now() + PROBE_PATIENCE);
                }
                Err(_) => {
                    let _ = tx.send(WakeSignal::Lost).await;
                    tokio::time::sleep(REDIAL_AFTER).await;
                    break;
                }
            }
        }
    }
}

async fn dial(pool: &PgPool, channel: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(channel).await?;
    Ok(listener)
}

/// Sends a probe through the pool (not the LISTEN session); answers its payload.
async fn send_probe(pool: &PgPool, channel: &str) -> Option<String> {
    let token = format!("{PROBE_PREFIX}{}", uuid::Uuid::now_v7());
    sqlx::query(safe("select pg_notify($1, $2)".to_string()))
        .bind(channel)
        .bind(&token)
        .execute(pool)
        .await
        .ok()
        .map(|_| token)
}
