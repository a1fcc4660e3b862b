//! How an attempt ended: the receiver's status and `Retry-After` (or the transport's error)
//! classified, and each outcome's error. Apart from the sender because it is pure: the
//! classification is tested without a network.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::clock::Timestamp;
use crate::error::{ErrorClass, ErrorCode, JobError};

use super::safety::{private_refused, PrivateAddressRefused};

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Delivered,
    /// 5xx, 408, 425, a 429 without a delay, or no answer (`timed_out` says which).
    Failed {
        timed_out: bool,
    },
    /// A retryable status with a stated delay (clamped).
    Throttled(Duration),
    /// A redirect, never followed.
    Redirected,
    /// Another 4xx.
    Rejected,
    /// The host resolved only to private addresses.
    PrivateRefused,
}

impl Outcome {
    pub(super) fn from_transport(error: &reqwest::Error) -> Outcome {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = source {
            if e.is::<PrivateAddressRefused>() {
                return Outcome::PrivateRefused;
            }
            source = e.source();
        }
        Outcome::Failed {
            timed_out: error.is_timeout(),
        }
    }

    pub(super) fn into_error(
        self,
        event_id: &str,
        endpoint_id: &str,
        shown: &str,
        status: Option<u16>,
    ) -> JobError {
        let to = format!("webhook event `{event_id}` to endpoint `{endpoint_id}` at {shown}");
        let status = status.map(|s| s.to_string()).unwrap_or_default();
        match self {
            Outcome::Delivered => unreachable!("a delivered attempt has no error"),
            Outcome::Failed { timed_out: true } => JobError::new(
                ErrorCode::WebhookDeliveryFailed,
                format!("{to} got no answer within the timeout"),
            ),
            Outcome::Failed { timed_out: false } if status.is_empty() => JobError::new(
                ErrorCode::WebhookDeliveryFailed,
                format!("{to} was never answered (the connection failed)"),
            ),
            Outcome::Failed { .. } => JobError::new(
                ErrorCode::WebhookDeliveryFailed,
                format!("{to} answered {status}"),
            ),
            Outcome::Throttled(delay) => JobError::new(
                ErrorCode::WebhookDeliveryThrottled,
                format!(
                    "{to} answered {status} with Retry-After {}s",
                    delay.as_secs()
                ),
            )
            .with_class(ErrorClass::RetryAfter(delay)),
            Outcome::Redirected => JobError::new(
                ErrorCode::WebhookDeliveryRejected,
                format!("{to} answered a redirect ({status}), which is never followed"),
            ),
            Outcome::Rejected => JobError::new(
                ErrorCode::WebhookDeliveryRejected,
                format!("{to} answered {status}"),
            ),
            Outcome::PrivateRefused => private_refused(shown),
        }
    }
}

/// Classifies a receiver's answer. A retryable status (5xx, 408, 425, 429) with a positive
/// `Retry-After` (delta seconds, or an HTTP date against the response's `Date`, else `now`)
/// is throttled with that delay clamped by `max_delay`; `0` or a past date counts as unstated.
pub(crate) fn classify(
    status: u16,
    retry_after: Option<&str>,
    date: Option<&str>,
    now: Timestamp,
    max_delay: Duration,
) -> Outcome {
    match status {
        200..=299 => Outcome::Delivered,
        300..=399 => Outcome::Redirected,
        408 | 425 | 429 | 500..=599 => match retry_after.and_then(|v| stated_delay(v, date, now)) {
            Some(delay) => Outcome::Throttled(delay.min(max_delay)),
            None => Outcome::Failed { timed_out: false },
        },
        400..=499 => Outcome::Rejected,
        _ => Outcome::Failed { timed_out: false },
    }
}

fn stated_delay(value: &str, date: Option<&str>, now: Timestamp) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return (seconds > 0).then(|| Duration::from_secs(seconds));
    }
    let http_date = |text: &str| {
        DateTime::parse_from_rfc2822(text.trim())
            .ok()
            .map(|d| d.with_timezone(&Utc))
    };
    let at = http_date(value)?;
    // The receiver's own Date, so its clock and ours need not agree.
    let base = date.and_then(http_date).unwrap_or(now);
    (at - base).to_std().ok().filter(|d| !d.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn answers_are_classified_as_the_reference_does() {
        let now = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
        let max = Duration::from_secs(600);
        assert_eq!(classify(204, None, None, now, max), Outcome::Delivered);
        assert_eq!(classify(302, None, None, now, max), Outcome::Redirected);
        assert_eq!(classify(404, None, None, now, max), Outcome::Rejected);
        assert_eq!(
            classify(503, None, None, now, max),
            Outcome::Failed { timed_out: false }
        );
        assert_eq!(
            classify(429, Some("0"), None, now, max),
            Outcome::Failed { timed_out: false }
        );
        assert_eq!(
            classify(429, Some("30"), None, now, max),
            Outcome::Throttled(Duration::from_secs(30))
        );
        assert_eq!(
            classify(429, Some("86400"), None, now, max),
            Outcome::Throttled(max)
        );
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        let later = "Wed, 21 Oct 2015 07:30:00 GMT";
        assert_eq!(
            classify(503, Some(later), Some(date), now, max),
            Outcome::Throttled(Duration::from_secs(120))
        );
        // A past date is unstated.
        assert_eq!(
            classify(503, Some(date), Some(later), now, max),
            Outcome::Failed { timed_out: false }
        );
    }
}
