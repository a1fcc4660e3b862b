//! Duration literals: `timeout = "10m"`, `delay = "1s"`, `event_poll = "30s"`, and the unique
//! period `unique(for = "1h")` ([`UniquePeriod`]).
//!
//! A duration is a string literal read by the rule the runtime applies to a computed one
//! (`jobs_grammar::duration`: "500ms", "30s", "1h 30m", "3d"), decided at compile time and
//! emitted as whole milliseconds. Zero, negative, sub-millisecond and unparsable values are
//! refused at the literal (seed-inventory §30 item 9).

use jobs_grammar::duration::{parse_millis, DurationError, MAX_UNIQUE_FOR_MILLIS};
use syn::{Expr, ExprLit, Lit, LitStr};

use super::Value;

/// A positive, whole-millisecond duration and the literal it came from.
#[derive(Debug, Clone)]
pub struct DurationValue {
    /// The duration in milliseconds; at least 1.
    pub millis: u64,
    /// The literal as written.
    pub lit: LitStr,
}

impl Value for DurationValue {
    fn parse(expr: &Expr, arg: &str) -> syn::Result<Self> {
        parse(expr, arg, when_zero(arg))
    }
}

/// The period of `unique(for = "1h")`: a duration read by the same rule, named `unique(for)` in
/// messages, at most 10 years (`MAX_UNIQUE_FOR_MILLIS`, the runtime's `MAX_UNIQUE_FOR`).
#[derive(Debug, Clone)]
pub struct UniquePeriod(pub DurationValue);

impl Value for UniquePeriod {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        let period = parse_written(
            expr,
            "unique(for)",
            "unique(for = {})",
            "leave `unique(..)` out to hold the key only while the job is live",
        )?;
        if period.millis > MAX_UNIQUE_FOR_MILLIS {
            return Err(syn::Error::new_spanned(
                &period.lit,
                format!(
                    "invalid duration `{}` for `unique(for)`: a unique period is at most 10 years \
                     (\"3650d\"); leave `unique(..)` out to hold the key only while the job is \
                     live (X_JOB_DECLARATION_INVALID)",
                    period.lit.value()
                ),
            ));
        }
        Ok(UniquePeriod(period))
    }
}

/// What to write instead of a zero duration for the argument `arg`.
fn when_zero(arg: &str) -> &'static str {
    match arg {
        "timeout" => "leave `timeout` out for no ceiling on an attempt",
        "step_timeout" => "leave `step_timeout` out for no ceiling on a step",
        "event_poll" => "leave `event_poll` out to poll every 30s",
        "expires_in" => "leave `expires_in` out for a job that never expires",
        "debounce" => "leave `debounce` out for a job that runs as soon as it is enqueued",
        "delay" => "use `backoff = fixed` for evenly spaced retries",
        "max_delay" => "leave `max_delay` out for the 1h default",
        "per" => "a window of 0 would allow no start; give a window such as \"1s\" or \"1m\"",
        "poll" => "a caught-up consumer would read without a pause; leave `poll` out to wait 5s",
        _ => "leave it out for the default",
    }
}

/// What to say after "expected": the shape of a good value.
const EXAMPLES: &str = "a positive duration such as \"30s\", \"10m\", \"3d\"";

/// Parses the duration argument `arg` (`timeout`, `retry(delay)`, ...). `when_zero` says what
/// to do instead of a zero duration ("leave `timeout` out for no ceiling").
pub fn parse(expr: &Expr, arg: &str, when_zero: &str) -> syn::Result<DurationValue> {
    parse_written(expr, arg, &format!("{arg} = {{}}"), when_zero)
}

/// [`parse`], for an argument written as `written` (`{}` stands for its value: `timeout = {}`,
/// `unique(for = {})`), which a message shows when it suggests a value.
fn parse_written(
    expr: &Expr,
    arg: &str,
    written: &str,
    when_zero: &str,
) -> syn::Result<DurationValue> {
    let with = |value: String| written.replace("{}", &value);
    let lit = match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => lit,
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) if !int.base10_digits().starts_with('-') => {
            return Err(syn::Error::new_spanned(
                expr,
                format!(
                    "`{arg}` takes a duration string with a unit: write `{}` or `{}` \
                     (X_JOB_DECLARATION_INVALID)",
                    with(format!("\"{}s\"", int.base10_digits())),
                    with(format!("\"{}ms\"", int.base10_digits())),
                ),
            ))
        }
        _ => {
            return Err(syn::Error::new_spanned(
                expr,
                format!(
                    "`{arg}` takes a duration string: expected {EXAMPLES} \
                     (X_JOB_DECLARATION_INVALID)"
                ),
            ))
        }
    };
    let text = lit.value();
    let invalid = |why: &str| {
        syn::Error::new_spanned(
            lit,
            format!("invalid duration `{text}` for `{arg}`: {why} (X_JOB_DECLARATION_INVALID)"),
        )
    };
    let millis = parse_millis(&text).map_err(|err| match err {
        DurationError::Negative => invalid(&format!(
            "a duration cannot be negative; expected {EXAMPLES}"
        )),
        DurationError::Zero => invalid(&format!("it must be greater than zero; {when_zero}")),
        DurationError::SubMillisecond => {
            invalid("durations count whole milliseconds; round it to \"1ms\" or more")
        }
        DurationError::TooLong => invalid("it is too long to count in milliseconds"),
        _ => invalid(&format!("expected {EXAMPLES}")),
    })?;
    Ok(DurationValue {
        millis,
        lit: lit.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<u64, String> {
        let expr: Expr = syn::parse_str(&format!("{text:?}")).unwrap();
        parse(&expr, "timeout", "leave `timeout` out for no ceiling")
            .map(|d| d.millis)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn durations_are_read_by_the_shared_rule() {
        assert_eq!(check("10m"), Ok(600_000));
        assert_eq!(check("1000us"), Ok(1));
        for (text, why) in [
            ("3 fortnights", "expected a positive duration"),
            ("-5s", "a duration cannot be negative"),
            ("0s", "it must be greater than zero; leave `timeout` out"),
            ("1500us", "durations count whole milliseconds"),
            ("600000000y", "it is too long to count in milliseconds"),
        ] {
            let err = check(text).unwrap_err();
            assert!(
                err.starts_with(&format!("invalid duration `{text}` for `timeout`: {why}")),
                "{text}: {err}"
            );
            assert!(err.ends_with("(X_JOB_DECLARATION_INVALID)"), "{err}");
        }
    }
}
