//! Whole numbers of at least 1: `attempts = 5`, `concurrency = 3`, `limit = 1`.

use syn::{Expr, ExprLit, ExprUnary, Lit, UnOp};

use super::{shown, Value};

/// A whole number of at least 1 (`attempts`, `concurrency`, `limit`, `batch`, `max_catch_up`).
#[derive(Debug, Clone, Copy)]
pub struct Count(pub u32);

impl Value for Count {
    fn parse(expr: &Expr, arg: &str) -> syn::Result<Self> {
        positive(expr, arg, when_zero(arg)).map(Count)
    }
}

/// Why 0 makes no sense for `arg`, and what to write instead.
fn when_zero(arg: &str) -> &'static str {
    match arg {
        "attempts" => "0 attempts means the job never runs; use `attempts = 1` for no retries",
        "concurrency" => "a cap of 0 would never run the job; leave `concurrency` out for no cap",
        "limit" => "a limit of 0 would never run the job; write `limit = 1` or more",
        "batch" => {
            "a page of 0 rows would never move the cursor; leave `batch` out for 1,000 rows \
             per page"
        }
        "max_catch_up" => {
            "`catch_up = run_all` would fire no missed occurrence; leave `max_catch_up` out \
             for the default of 10 per round"
        }
        "disable_after" => {
            "an endpoint disabled after 0 failures would never be sent to; leave \
             `disable_after` out for the default of 10"
        }
        "lap" => "a lap of 0 pages would read nothing; leave `lap` out for 100 pages a lap",
        _ => "write a number of at least 1",
    }
}

/// Reads a whole number >= 1 for `arg`. `when_zero` says why 0 makes no sense and what to
/// write instead ("0 attempts means the job never runs; use `attempts = 1` for no retries").
fn positive(expr: &Expr, arg: &str, when_zero: &str) -> syn::Result<u32> {
    let fail = |message: String| {
        Err(syn::Error::new_spanned(
            expr,
            format!("{message} (X_JOB_DECLARATION_INVALID)"),
        ))
    };
    let int = match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => int,
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => {
            return fail(format!(
                "`{arg}` must be a whole number of at least 1, found `{}`",
                shown(expr)
            ))
        }
        Expr::Lit(ExprLit {
            lit: Lit::Float(_), ..
        }) => {
            return fail(format!(
                "`{arg}` must be a whole number of at least 1, found `{}`",
                shown(expr)
            ))
        }
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => {
            return fail(format!(
                "`{arg}` takes a number, not a string: write `{arg} = {}`",
                lit.value()
            ))
        }
        _ => {
            return fail(format!(
                "`{arg}` must be a whole number literal of at least 1, found `{}`",
                shown(expr)
            ))
        }
    };
    // In an attribute, syn reads `-1` as one negative literal.
    if int.base10_digits().starts_with('-') {
        return fail(format!(
            "`{arg}` must be a whole number of at least 1, found `{}`",
            int.base10_digits()
        ));
    }
    if !int.suffix().is_empty() {
        return fail(format!(
            "write `{arg} = {}` without the `{}` suffix",
            int.base10_digits(),
            int.suffix()
        ));
    }
    match int.base10_parse::<u64>() {
        Ok(0) => fail(format!("`{arg}` must be at least 1: {when_zero}")),
        Ok(n) => match u32::try_from(n) {
            Ok(n) => Ok(n),
            Err(_) => fail(format!("`{arg}` is too large: at most {}", u32::MAX)),
        },
        Err(_) => fail(format!("`{arg}` is too large: at most {}", u32::MAX)),
    }
}
