//! The wake payload the Postgres and Redis drivers share: a queue name (`Queue`: due jobs
//! arrived) or `@<microseconds since the epoch>:<queue>` (`Due`: a job of the queue is due
//! then). A queue name never holds `@` or `:` (the name grammar), so the two cannot be mistaken.

use chrono::DateTime;

use crate::driver::WakeSignal;

/// Reads one payload.
pub(crate) fn signal(payload: &str) -> WakeSignal {
    let due = payload.strip_prefix('@').and_then(|rest| {
        let (micros, queue) = rest.split_once(':')?;
        let at = DateTime::from_timestamp_micros(micros.parse().ok()?)?;
        Some(WakeSignal::Due {
            queue: queue.to_string(),
            at,
        })
    });
    due.unwrap_or_else(|| WakeSignal::Queue(payload.to_string()))
}

/// The payload announcing that a job of `queue` is due at `micros` (microseconds since the
/// epoch, rounded up).
#[cfg(feature = "redis")]
pub(crate) fn due(queue: &str, micros: i64) -> String {
    format!("@{micros}:{queue}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_queue_and_a_due_time() {
        assert_eq!(signal("email"), WakeSignal::Queue("email".into()));
        let at = DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap();
        assert_eq!(
            signal("@1700000000123456:billing.send-invoice"),
            WakeSignal::Due {
                queue: "billing.send-invoice".into(),
                at
            }
        );
    }
}
