//! Where a key comes from: `key = "welcome:{user_id}"` (a template over the input's fields) or
//! `key = <callable>` (a closure or fn path taking `&Input`, returning anything `ToString`).

use syn::Expr;

use super::key_template::KeyTemplate;
use super::{lit_str, shown, Value};

/// A key derivation (`key`, `concurrency(key)`).
#[derive(Debug, Clone)]
pub enum KeySource {
    /// A template over the input's fields.
    Template(KeyTemplate),
    /// An expression callable as `Fn(&Input) -> impl ToString`.
    Callable(Expr),
}

impl Value for KeySource {
    fn parse(expr: &Expr, arg: &str) -> syn::Result<Self> {
        if let Some(lit) = lit_str(expr) {
            return KeyTemplate::parse(lit, arg).map(KeySource::Template);
        }
        if callable(expr) {
            return Ok(KeySource::Callable(expr.clone()));
        }
        Err(syn::Error::new_spanned(
            expr,
            format!(
                "`{arg}` takes a template string such as \"welcome:{{user_id}}\" or a closure \
                 over the input such as `|input| format!(\"welcome:{{}}\", input.user_id)`, \
                 found `{}` (X_JOB_DECLARATION_INVALID)",
                shown(expr)
            ),
        ))
    }
}

/// Whether `expr` can be a callable: closures, paths, and expressions that may evaluate to one.
/// Literals, arrays, tuples and arithmetic cannot (§30 item 8: "`key` not a closure/fn path").
pub fn callable(expr: &Expr) -> bool {
    match expr {
        Expr::Closure(_)
        | Expr::Path(_)
        | Expr::Call(_)
        | Expr::MethodCall(_)
        | Expr::Macro(_)
        | Expr::Block(_)
        | Expr::Field(_)
        | Expr::Index(_)
        | Expr::If(_)
        | Expr::Match(_)
        | Expr::Reference(_) => true,
        Expr::Paren(inner) => callable(&inner.expr),
        Expr::Group(inner) => callable(&inner.expr),
        _ => false,
    }
}
