//! Durations written as text (`"30s"`, `"3d"`, `"1h 30m"`), checked at run time by the rule
//! `#[job]` applies at compile time (`jobs_grammar::duration`, one parser for both): they must
//! parse, be positive, and count whole milliseconds (`"1500us"` is refused, `"1000us"` is
//! `1ms`).
//!
//! A string literal given to `run.sleep` or `run.wait_for_event` is checked by `#[job]` when
//! the job compiles; a computed one (read from the input or from configuration) only when the
//! call runs, and then the error names the call. A [`Duration`] value is taken as it is, above
//! zero.

use std::time::Duration;

use jobs_grammar::duration::DurationError;

use crate::error::{ErrorCode, JobError};

/// What every refusal asks for.
const EXAMPLES: &str = "a positive duration such as \"30s\", \"10m\", \"3d\" or \"1h 30m\"";

/// At most this many characters of a refused text are repeated in the message: it may come
/// from an input, and a message is no place for a payload.
const SHOWN_CHARS: usize = 32;

/// Parses a positive, whole-millisecond duration such as `"30s"`, `"10m"`, `"3d"` or
/// `"1h 30m"`.
///
/// ```
/// use jobs::duration::parse_duration;
/// use std::time::Duration;
///
/// assert_eq!(parse_duration("3d").unwrap(), Duration::from_secs(3 * 86_400));
/// assert!(parse_duration("0s").is_err());
/// assert!(parse_duration("3 fortnights").is_err());
/// assert!(parse_duration("1500us").is_err()); // as `#[job]` refuses it at compile time
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, JobError> {
    check_text(text).map_err(InvalidDuration::into_error)
}

fn check_text(text: &str) -> Result<Duration, InvalidDuration> {
    jobs_grammar::duration::parse_duration(text)
        .map_err(|why: DurationError| InvalidDuration::new(text, why.why()))
}

/// A duration that was refused: the text as given (shortened) and why.
#[derive(Debug, Clone)]
pub struct InvalidDuration {
    shown: String,
    why: &'static str,
}

impl InvalidDuration {
    fn new(text: &str, why: &'static str) -> Self {
        let mut shown: String = text.chars().take(SHOWN_CHARS).collect();
        if text.chars().nth(SHOWN_CHARS).is_some() {
            shown.push_str("...");
        }
        InvalidDuration { shown, why }
    }

    /// The error for a duration read outside any call: `X_INVARIANT`, terminal.
    pub fn into_error(self) -> JobError {
        JobError::new(
            ErrorCode::Invariant,
            format!("invalid duration `{}`: {}", self.shown, self.why),
        )
        .with_fix(format!("write {EXAMPLES}"))
    }

    /// The error for a duration given to `call` (`run.sleep`): `X_INVARIANT`, terminal, since
    /// the same value comes back on every attempt and no retry can make it valid.
    pub fn into_call_error(self, call: &str, what: &str) -> JobError {
        JobError::new(
            ErrorCode::Invariant,
            format!(
                "`{call}` got an invalid {what} `{}`: {}; pass {EXAMPLES}",
                self.shown, self.why
            ),
        )
        .with_fix(format!(
            "pass {EXAMPLES} (or a `Duration` above zero) to `{call}`; a string literal is \
             checked when the job compiles, a computed one only here, so check configured \
             values where they are read, with `jobs::duration::parse_duration`"
        ))
    }
}

/// A duration given either as [`Duration`] or as text (`"3d"`).
pub trait IntoDuration {
    /// The duration, or why it was refused: text that does not parse, is not positive or is
    /// not whole milliseconds; a zero [`Duration`].
    fn try_into_duration(self) -> Result<Duration, InvalidDuration>;

    /// The duration, or `X_INVARIANT` when it is refused (see `try_into_duration`).
    fn into_duration(self) -> Result<Duration, JobError>
    where
        Self: Sized,
    {
        self.try_into_duration()
            .map_err(InvalidDuration::into_error)
    }
}

impl IntoDuration for Duration {
    fn try_into_duration(self) -> Result<Duration, InvalidDuration> {
        if self.is_zero() {
            return Err(InvalidDuration::new("0s", "it is zero"));
        }
        Ok(self)
    }
}

impl IntoDuration for &str {
    fn try_into_duration(self) -> Result<Duration, InvalidDuration> {
        check_text(self)
    }
}

impl IntoDuration for &String {
    fn try_into_duration(self) -> Result<Duration, InvalidDuration> {
        check_text(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_positive_and_refuses_the_rest() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("1h 30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1000us").unwrap(), Duration::from_millis(1));
        for bad in ["", "0s", "-5s", "3 fortnights", "abc", "1500us", "1ns"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.is(ErrorCode::Invariant), "{bad}");
        }
    }

    #[test]
    fn a_call_error_names_the_call_and_shortens_the_text() {
        let long = "x".repeat(100);
        let e = long
            .as_str()
            .try_into_duration()
            .unwrap_err()
            .into_call_error("run.sleep", "duration");
        assert!(e.is(ErrorCode::Invariant));
        let message = e.message();
        assert!(
            message.starts_with("`run.sleep` got an invalid duration `"),
            "{message}"
        );
        assert!(
            message.contains(&format!("{}...", "x".repeat(32))),
            "{message}"
        );
        assert!(!message.contains(&"x".repeat(33)), "{message}");
        assert!(e.fix().unwrap().contains("`run.sleep`"));
    }

    #[test]
    fn a_computed_sub_millisecond_duration_is_refused_as_the_macro_refuses_a_literal() {
        let e = "1500us"
            .try_into_duration()
            .unwrap_err()
            .into_call_error("run.sleep", "duration");
        assert!(e.is(ErrorCode::Invariant));
        assert!(
            e.message().starts_with(
                "`run.sleep` got an invalid duration `1500us`: it is not a whole number of \
                 milliseconds"
            ),
            "{}",
            e.message()
        );
        assert_eq!(
            "1000us".try_into_duration().unwrap(),
            Duration::from_millis(1)
        );
    }
}

/// A duration as it would be declared: `60 s` -> `1m`, `1.5 s` -> `1500ms` (whole units only,
/// the largest that fits exactly), for the dashboard, the operator tool and a worker's
/// announced limits.
pub(crate) fn shown(duration: Duration) -> String {
    const UNITS: [(u128, &str); 4] = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1_000, "s"),
    ];
    let ms = duration.as_millis();
    for (size, unit) in UNITS {
        if ms >= size && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod shown_tests {
    use super::*;

    #[test]
    fn a_window_is_shown_as_declared() {
        assert_eq!(shown(Duration::from_secs(60)), "1m");
        assert_eq!(shown(Duration::from_secs(90)), "90s");
        assert_eq!(shown(Duration::from_millis(1500)), "1500ms");
        assert_eq!(shown(Duration::from_secs(86_400)), "1d");
    }
}
