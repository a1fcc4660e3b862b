//! Durations written as text (`"30s"`, `"3d"`, `"1h 30m"`), checked at run time with the same
//! rule `#[job]` applies at compile time: they must parse and be positive.

use std::time::Duration;

use crate::error::{ErrorCode, JobError};

/// Parses a positive duration such as `"30s"`, `"10m"`, `"3d"` or `"1h 30m"`.
///
/// ```
/// use jobs::duration::parse_duration;
/// use std::time::Duration;
///
/// assert_eq!(parse_duration("3d").unwrap(), Duration::from_secs(3 * 86_400));
/// assert!(parse_duration("0s").is_err());
/// assert!(parse_duration("3 fortnights").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, JobError> {
    match humantime::parse_duration(text.trim()) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(invalid(text, "it is zero")),
        Err(_) => Err(invalid(text, "it does not parse")),
    }
}

fn invalid(text: &str, why: &str) -> JobError {
    JobError::new(
        ErrorCode::Invariant,
        format!("invalid duration `{text}`: {why}"),
    )
    .with_fix("write a positive duration such as \"30s\", \"10m\", \"3d\" or \"1h 30m\"")
}

/// A duration given either as [`Duration`] or as text (`"3d"`).
pub trait IntoDuration {
    /// The duration, or `X_INVARIANT` when the text does not parse or is not positive.
    fn into_duration(self) -> Result<Duration, JobError>;
}

impl IntoDuration for Duration {
    fn into_duration(self) -> Result<Duration, JobError> {
        if self.is_zero() {
            return Err(invalid("0s", "it is zero"));
        }
        Ok(self)
    }
}

impl IntoDuration for &str {
    fn into_duration(self) -> Result<Duration, JobError> {
        parse_duration(self)
    }
}

impl IntoDuration for &String {
    fn into_duration(self) -> Result<Duration, JobError> {
        parse_duration(self)
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
        for bad in ["", "0s", "-5s", "3 fortnights", "abc"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.is(ErrorCode::Invariant), "{bad}");
        }
    }
}
