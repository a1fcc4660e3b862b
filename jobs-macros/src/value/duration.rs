//! Duration literals: `timeout = "10m"`, `delay = "1s"`, `event_poll = "30s"`.
//!
//! A duration is a string literal that `humantime` reads ("500ms", "30s", "1h 30m", "3d"),
//! decided at compile time and emitted as whole milliseconds. Zero, negative and unparsable
//! values are refused at the literal (seed-inventory §30 item 9).

use syn::{Expr, ExprLit, Lit, LitStr};

/// A positive, whole-millisecond duration and the literal it came from.
#[derive(Debug, Clone)]
pub struct DurationValue {
    /// The duration in milliseconds; at least 1.
    pub millis: u64,
    /// The literal as written.
    pub lit: LitStr,
}

/// What to say after "expected": the shape of a good value.
const EXAMPLES: &str = "a positive duration such as \"30s\", \"10m\", \"3d\"";

/// Parses the duration argument `arg` (`timeout`, `retry(delay)`, ...). `when_zero` says what
/// to do instead of a zero duration ("leave `timeout` out for no ceiling").
pub fn parse(expr: &Expr, arg: &str, when_zero: &str) -> syn::Result<DurationValue> {
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
                    "`{arg}` takes a duration string with a unit: write `{arg} = \"{}s\"` or \
                     `{arg} = \"{}ms\"` (X_JOB_DECLARATION_INVALID)",
                    int.base10_digits(),
                    int.base10_digits(),
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
    if text.trim_start().starts_with('-') {
        return Err(invalid(&format!(
            "a duration cannot be negative; expected {EXAMPLES}"
        )));
    }
    let duration =
        humantime::parse_duration(&text).map_err(|_| invalid(&format!("expected {EXAMPLES}")))?;
    if duration.is_zero() {
        return Err(invalid(&format!(
            "it must be greater than zero; {when_zero}"
        )));
    }
    if duration.subsec_nanos() % 1_000_000 != 0 {
        return Err(invalid(
            "durations count whole milliseconds; round it to \"1ms\" or more",
        ));
    }
    let millis = u64::try_from(duration.as_millis())
        .map_err(|_| invalid("it is too long to count in milliseconds"))?;
    Ok(DurationValue {
        millis,
        lit: lit.clone(),
    })
}
