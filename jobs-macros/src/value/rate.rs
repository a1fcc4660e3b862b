//! `rate = 5.0`: a backfill's pages per second, a finite number above 0 (seed-inventory §20,
//! §30 item 23). There is no unthrottled mode: a fast sweep is a high rate.

use syn::{Expr, ExprLit, Lit};

use super::{shown, Value};

/// Pages per second: finite and above 0.
#[derive(Debug, Clone, Copy)]
pub struct Rate(pub f64);

impl Value for Rate {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        parse(expr).map(Rate)
    }
}

/// Reads `rate = ..` into pages per second.
fn parse(expr: &Expr) -> syn::Result<f64> {
    let fail = |message: String| {
        Err(syn::Error::new_spanned(
            expr,
            format!("{message} (X_JOB_DECLARATION_INVALID)"),
        ))
    };
    let (digits, suffix) = match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Float(f), ..
        }) => (f.base10_digits().to_string(), f.suffix().to_string()),
        Expr::Lit(ExprLit {
            lit: Lit::Int(i), ..
        }) => (i.base10_digits().to_string(), i.suffix().to_string()),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => {
            return fail(format!(
                "`rate` takes a number of pages per second, not a string: write `rate = {}`",
                s.value()
            ))
        }
        Expr::Unary(_) => {
            return fail(format!(
                "`rate` must be above 0 pages per second, found `{}`; there is no unthrottled \
                 mode: write a high rate such as `rate = 200.0` for a fast sweep",
                shown(expr)
            ))
        }
        _ => {
            return fail(format!(
                "`rate` takes a number literal of pages per second, such as `rate = 5.0`, \
                 found `{}`",
                shown(expr)
            ))
        }
    };
    if !suffix.is_empty() {
        return fail(format!(
            "write `rate = {digits}` without the `{suffix}` suffix"
        ));
    }
    let value: f64 = match digits.parse() {
        Ok(value) => value,
        Err(_) => return fail(format!("`rate = {digits}` is not a number")),
    };
    if digits.starts_with('-') || !value.is_finite() || value <= 0.0 {
        return fail(format!(
            "`rate` must be above 0 pages per second, found `{digits}`; there is no \
             unthrottled mode: write a high rate such as `rate = 200.0` for a fast sweep, or \
             `rate = 0.5` for one page every 2 s"
        ));
    }
    Ok(value)
}
