//! `cron = "0 9 * * 1-5"`: a standard 5-field cron expression (seed-inventory §12, §30 item 17),
//! read by the dialect the runtime reads it with (`jobs_grammar::cron`), so a cron that compiles
//! is one the scheduler fires as written.

use jobs_grammar::cron::{Cron, CronErrorKind, SHAPE};
use syn::Expr;

use super::{lit_str, shown, Value};

/// A checked cron expression.
#[derive(Debug, Clone)]
pub struct CronValue {
    /// The five fields, separated by one space.
    pub expr: String,
}

impl Value for CronValue {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        parse(expr)
    }
}

/// Reads `cron = ".."`.
fn parse(expr: &Expr) -> syn::Result<CronValue> {
    let Some(lit) = lit_str(expr) else {
        return Err(syn::Error::new_spanned(
            expr,
            format!(
                "`cron` takes a string literal, found `{}`: write `cron = \"0 9 * * 1-5\"` \
                 (X_INVARIANT)",
                shown(expr)
            ),
        ));
    };
    let text = lit.value();
    match Cron::parse(&text) {
        Ok(cron) => Ok(CronValue {
            expr: cron.as_str().to_owned(),
        }),
        Err(err) if err.kind() == CronErrorKind::Blank => Err(syn::Error::new_spanned(
            lit,
            format!("`cron` cannot be blank: {SHAPE}, e.g. \"0 9 * * 1-5\" (X_INVARIANT)"),
        )),
        Err(err) => Err(syn::Error::new_spanned(
            lit,
            format!("invalid cron `{text}`: {err} (X_INVARIANT)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<String, String> {
        let expr: Expr = syn::parse_str(&format!("{text:?}")).unwrap();
        parse(&expr).map(|c| c.expr).map_err(|e| e.to_string())
    }

    #[test]
    fn crons_are_read_by_the_shared_grammar() {
        assert_eq!(check("  0   9 * *  1-5 ").as_deref(), Ok("0 9 * * 1-5"));
        assert_eq!(check("0 0 * * 5/2").as_deref(), Ok("0 0 * * 5/2"));
        for (text, message) in [
            (
                "0 0 9 * * *",
                "invalid cron `0 0 9 * * *`: a cron has 5 fields (minute hour day-of-month \
                 month day-of-week), found 6; remove the seconds field: `cron = \"0 9 * * *\"` \
                 (X_INVARIANT)",
            ),
            (
                "61 * * * *",
                "invalid cron `61 * * * *`: in the minute field, `61` is out of range (0-59) \
                 (X_INVARIANT)",
            ),
            (
                " ",
                "`cron` cannot be blank: a cron has 5 fields (minute hour day-of-month month \
                 day-of-week), e.g. \"0 9 * * 1-5\" (X_INVARIANT)",
            ),
        ] {
            assert_eq!(check(text).unwrap_err(), message, "{text}");
        }
        let expr: Expr = syn::parse_str("9").unwrap();
        assert!(parse(&expr)
            .unwrap_err()
            .to_string()
            .starts_with("`cron` takes a string literal, found `9`"));
    }
}
