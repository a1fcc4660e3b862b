//! How an attempt ended: the receiver's status and `Retry-After` (or the transport's error)
//! classified, and each outcome's error. Apart from the sender because it is pure: the
//! classification is tested without a network.

use std::time::Duration;

use chrono::Datelike;

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
    let at = parse_http_date(value, now)?;
    // The receiver's own Date, so its clock and ours need not agree.
    let base = date.and_then(|d| parse_http_date(d, now)).unwrap_or(now);
    (at - base).to_std().ok().filter(|d| !d.is_zero())
}

/// An HTTP date in any of the three forms RFC 9110 (section 5.6.7) requires a recipient to
/// accept: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
/// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`). An RFC 850
/// two-digit year that would sit more than 50 years after `now` is read as the most recent
/// past year with those digits, as the RFC says.
pub(crate) fn parse_http_date(text: &str, now: Timestamp) -> Option<Timestamp> {
    use chrono::NaiveDateTime;
    // Runs of spaces are one (asctime pads a one-digit day with a space).
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let utc = |naive: NaiveDateTime| naive.and_utc();
    if let Ok(naive) = NaiveDateTime::parse_from_str(&text, "%a, %d %b %Y %H:%M:%S GMT") {
        return Some(utc(naive));
    }
    if let Ok(naive) = NaiveDateTime::parse_from_str(&text, "%a %b %e %H:%M:%S %Y") {
        return Some(utc(naive));
    }
    // RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`, the year given by two digits.
    let (weekday, rest) = text.split_once(", ")?;
    let (day_month, rest) = rest.split_once(' ')?;
    let (day, month_year) = day_month.split_once('-')?;
    let (month, year) = month_year.split_once('-')?;
    let time = rest.strip_suffix(" GMT")?;
    if year.len() != 2 || !year.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let yy: i32 = year.parse().ok()?;
    let this_year = now.year();
    let mut full = this_year - this_year.rem_euclid(100) + yy;
    if full > this_year + 50 {
        full -= 100;
    }
    let naive = NaiveDateTime::parse_from_str(
        &format!("{weekday}, {day}-{month}-{full} {time}"),
        "%A, %d-%b-%Y %H:%M:%S",
    )
    .ok()?;
    Some(utc(naive))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

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

    #[test]
    fn retry_after_is_read_in_every_form_rfc_9110_names() {
        let now = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
        let max = Duration::from_secs(600);
        // The receiver's Date in one form, the Retry-After 90 s later in each form.
        let date = "Sun, 06 Nov 1994 08:49:37 GMT";
        for later in [
            // IMF-fixdate
            "Sun, 06 Nov 1994 08:51:07 GMT",
            // obsolete RFC 850
            "Sunday, 06-Nov-94 08:51:07 GMT",
            // asctime, the day padded with a space
            "Sun Nov  6 08:51:07 1994",
        ] {
            assert_eq!(
                classify(503, Some(later), Some(date), now, max),
                Outcome::Throttled(Duration::from_secs(90)),
                "{later}"
            );
        }
        // The Date header may itself be in an older form.
        assert_eq!(
            classify(
                429,
                Some("Sun, 06 Nov 1994 08:51:07 GMT"),
                Some("Sun Nov  6 08:49:37 1994"),
                now,
                max
            ),
            Outcome::Throttled(Duration::from_secs(90))
        );
        // delay-seconds
        assert_eq!(
            classify(429, Some(" 120 "), None, now, max),
            Outcome::Throttled(Duration::from_secs(120))
        );
        // Without a Date, against now: an asctime date 5 minutes ahead.
        let ahead = (now + chrono::Duration::minutes(5))
            .format("%a %b %e %H:%M:%S %Y")
            .to_string();
        assert_eq!(
            classify(503, Some(&ahead), None, now, max),
            Outcome::Throttled(Duration::from_secs(300))
        );
        // Not a date in any form: unstated.
        for junk in [
            "soon",
            "Sun, 06 Nov 1994",
            "-5",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
        ] {
            assert_eq!(
                classify(503, Some(junk), None, now, max),
                Outcome::Failed { timed_out: false },
                "{junk}"
            );
        }
    }

    #[test]
    fn an_rfc_850_year_is_never_read_more_than_50_years_ahead() {
        let now = Utc.timestamp_opt(1_700_000_000, 0).unwrap(); // 2023
        let at = |s| parse_http_date(s, now).unwrap().year();
        assert_eq!(at("Sunday, 06-Nov-94 08:49:37 GMT"), 1994);
        assert_eq!(at("Thursday, 06-Nov-25 08:49:37 GMT"), 2025);
        assert_eq!(at("Thursday, 06-Nov-70 08:49:37 GMT"), 2070);
        assert_eq!(at("Wednesday, 06-Nov-74 08:49:37 GMT"), 1974);
    }
}
