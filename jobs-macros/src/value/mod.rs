//! Typed values, one kind of literal per file. Each parser takes the user's expression and the
//! argument's name, and on failure says what it accepts, at the user's tokens.

pub mod backoff;
pub mod book;
pub mod catch_up;
pub mod count;
pub mod cron;
pub mod duration;
pub mod jitter;
pub mod key;
pub mod key_template;
pub mod posting;
pub mod rate;
pub mod scope;
pub mod tenant;
pub mod text;
pub mod tz;
pub mod when_busy;

use syn::{Expr, ExprLit, Ident, Lit, LitStr};

/// The string literal `expr` is, if it is one.
pub fn lit_str(expr: &Expr) -> Option<&LitStr> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Some(lit),
        _ => None,
    }
}

/// The bare word `expr` is (`exponential`, `org_id`, `none`), if it is one.
pub fn word(expr: &Expr) -> Option<&Ident> {
    match expr {
        Expr::Path(path) if path.qself.is_none() && path.attrs.is_empty() => path.path.get_ident(),
        _ => None,
    }
}

/// `expr` as the user wrote it, for a message.
pub fn shown(expr: &Expr) -> String {
    let text = quote::ToTokens::to_token_stream(expr)
        .to_string()
        .replace(" :: ", "::");
    // `- 5` reads better as `-5`.
    match text.strip_prefix("- ") {
        Some(rest) => format!("-{rest}"),
        None => text,
    }
}

/// A bare word chosen from a fixed set (`backoff = exponential`). A string literal naming a
/// member (`backoff = "exponential"`) is accepted too.
fn choice<T: Copy>(expr: &Expr, what: &str, options: &[(&str, T)]) -> syn::Result<T> {
    let found = match (word(expr), lit_str(expr)) {
        (Some(ident), _) => ident.to_string(),
        (None, Some(lit)) => lit.value(),
        (None, None) => shown(expr),
    };
    if let Some((_, value)) = options.iter().find(|(name, _)| *name == found) {
        return Ok(*value);
    }
    let names: Vec<&str> = options.iter().map(|(name, _)| *name).collect();
    Err(syn::Error::new_spanned(
        expr,
        format!(
            "unknown {what} `{found}`; expected {} (X_JOB_DECLARATION_INVALID)",
            crate::args::list(&names),
        ),
    ))
}
