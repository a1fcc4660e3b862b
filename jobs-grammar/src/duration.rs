//! Durations written as text: `"500ms"`, `"30s"`, `"1h 30m"`, `"3d"` (`humantime`'s units),
//! seed-inventory §30 item 9.
//!
//! One rule, at compile time for a literal and at run time for a computed text alike: the text
//! reads as a duration, is not negative, is above zero, and counts whole milliseconds (every
//! duration the crate keeps is stored in milliseconds, so `"1500us"` is refused rather than
//! silently rounded; `"1000us"` is `1ms` and is taken).

use std::fmt;
use std::time::Duration;

/// Why a text is not a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DurationError {
    /// It does not read as a duration (`"3 fortnights"`, `"30"`, `""`).
    Unreadable,
    /// It starts with a minus sign.
    Negative,
    /// It is zero (`"0s"`).
    Zero,
    /// It has a part below one millisecond (`"1500us"`).
    SubMillisecond,
    /// Its milliseconds do not fit in 64 bits.
    TooLong,
}

impl DurationError {
    /// Why, in a few words: "it does not parse", "it is zero", ...
    pub fn why(self) -> &'static str {
        match self {
            DurationError::Unreadable => "it does not parse",
            DurationError::Negative => "it is negative",
            DurationError::Zero => "it is zero",
            DurationError::SubMillisecond => {
                "it is not a whole number of milliseconds (durations count whole milliseconds)"
            }
            DurationError::TooLong => "it is too long to count in milliseconds",
        }
    }
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.why())
    }
}

impl std::error::Error for DurationError {}

/// Reads a positive, whole-millisecond duration (surrounding blanks are ignored).
///
/// ```
/// use jobs_grammar::duration::{parse_duration, DurationError};
/// use std::time::Duration;
///
/// assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5400)));
/// assert_eq!(parse_duration("1000us"), Ok(Duration::from_millis(1)));
/// assert_eq!(parse_duration("1500us"), Err(DurationError::SubMillisecond));
/// assert_eq!(parse_duration("-5s"), Err(DurationError::Negative));
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(DurationError::Negative);
    }
    let duration = humantime::parse_duration(text).map_err(|_| DurationError::Unreadable)?;
    if duration.is_zero() {
        return Err(DurationError::Zero);
    }
    if duration.subsec_nanos() % 1_000_000 != 0 {
        return Err(DurationError::SubMillisecond);
    }
    if u64::try_from(duration.as_millis()).is_err() {
        return Err(DurationError::TooLong);
    }
    Ok(duration)
}

/// The longest unique period (`#[job(unique(for = ".."))]`) in milliseconds: 10 years of 365
/// days. The macro refuses a longer literal, the runtime a longer computed period.
pub const MAX_UNIQUE_FOR_MILLIS: u64 = 10 * 365 * 24 * 3600 * 1000;

/// [`parse_duration`] in whole milliseconds, as a declaration stores it.
pub fn parse_millis(text: &str) -> Result<u64, DurationError> {
    let duration = parse_duration(text)?;
    // parse_duration checked that it fits.
    u64::try_from(duration.as_millis()).map_err(|_| DurationError::TooLong)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positive_whole_milliseconds_are_read() {
        for (text, millis) in [
            ("500ms", 500),
            ("30s", 30_000),
            (" 1h 30m ", 5_400_000),
            ("3d", 259_200_000),
            ("1.5s", 1_500),
            ("1000us", 1),
            ("2000000ns", 2),
        ] {
            assert_eq!(parse_millis(text), Ok(millis), "{text}");
        }
    }

    #[test]
    fn the_rest_is_refused_with_its_reason() {
        for (text, why) in [
            ("", DurationError::Unreadable),
            ("30", DurationError::Unreadable),
            ("3 fortnights", DurationError::Unreadable),
            ("1s; drop table x_jobs", DurationError::Unreadable),
            ("99999999999999999999999d", DurationError::Unreadable),
            ("-5s", DurationError::Negative),
            (" -1ms", DurationError::Negative),
            ("0s", DurationError::Zero),
            ("0ms 0s", DurationError::Zero),
            ("1500us", DurationError::SubMillisecond),
            ("1ns", DurationError::SubMillisecond),
            ("1.0005s", DurationError::SubMillisecond),
            ("600000000y", DurationError::TooLong),
        ] {
            assert_eq!(parse_duration(text), Err(why), "{text}");
        }
    }
}
