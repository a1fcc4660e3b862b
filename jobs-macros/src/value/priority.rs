//! `priority = N`: a whole number, negative or not. Its range is a rule of its own
//! (`check::job::priority_is_in_range`), so the refusal names the range where it is checked.

use syn::{Expr, ExprLit, ExprUnary, Lit, LitInt, UnOp};

use super::{shown, Value};

/// A declared priority, as written (the range is checked in `check/`).
#[derive(Debug, Clone, Copy)]
pub struct Priority(pub i64);

impl Value for Priority {
    fn parse(expr: &Expr, arg: &str) -> syn::Result<Self> {
        let fail = |message: String| {
            Err(syn::Error::new_spanned(
                expr,
                format!("{message} (X_JOB_DECLARATION_INVALID)"),
            ))
        };
        let (negative, int) = match expr {
            Expr::Lit(ExprLit {
                lit: Lit::Int(int), ..
            }) => (false, int),
            Expr::Unary(ExprUnary {
                op: UnOp::Neg(_),
                expr: inner,
                ..
            }) => match &**inner {
                Expr::Lit(ExprLit {
                    lit: Lit::Int(int), ..
                }) => (true, int),
                _ => {
                    return fail(format!(
                        "`{arg}` must be a whole number literal from -5 (claimed last) to 5 \
                         (claimed first), found `{}`",
                        shown(expr)
                    ))
                }
            },
            Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) => {
                let text = lit.value();
                return fail(match text.trim().parse::<i64>() {
                    Ok(n) => format!("`{arg}` takes a number, not a string: write `{arg} = {n}`"),
                    Err(_) => format!(
                        "`{arg}` takes a whole number from -5 (claimed last) to 5 (claimed \
                         first), not the string `{}`",
                        shown(expr)
                    ),
                });
            }
            _ => {
                return fail(format!(
                    "`{arg}` must be a whole number literal from -5 (claimed last) to 5 \
                     (claimed first), found `{}`",
                    shown(expr)
                ))
            }
        };
        if !int.suffix().is_empty() {
            return fail(format!(
                "write `{arg} = {}{}` without the `{}` suffix",
                if negative { "-" } else { "" },
                int.base10_digits(),
                int.suffix()
            ));
        }
        match parse(int) {
            Some(n) => Ok(Priority(if negative { -n } else { n })),
            None => fail(format!(
                "`{arg}` must be a whole number from -5 to 5, found `{}`",
                shown(expr)
            )),
        }
    }
}

/// The literal's value; in an attribute syn may read `-1` as one negative literal.
fn parse(int: &LitInt) -> Option<i64> {
    int.base10_parse::<i64>().ok()
}
