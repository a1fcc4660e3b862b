//! Plain string and flag arguments: `name = "send-welcome"`, `queue = "email"`,
//! `dead_letter = false`, `crate = "::jobs"`, and the path/ident arguments `on_settled` and
//! `handle`.

use syn::{Expr, ExprLit, Ident, Lit, LitStr, Path};

use super::{lit_str, shown, word};

/// A non-blank string literal (`name`, `queue`).
pub fn non_blank(expr: &Expr, arg: &str) -> syn::Result<LitStr> {
    let Some(lit) = lit_str(expr) else {
        let hint = match word(expr) {
            Some(ident) => format!("write `{arg} = \"{ident}\"`"),
            None => format!("write `{arg} = \"..\"`"),
        };
        return Err(syn::Error::new_spanned(
            expr,
            format!("`{arg}` takes a string literal: {hint} (X_JOB_DECLARATION_INVALID)"),
        ));
    };
    if lit.value().trim().is_empty() {
        return Err(syn::Error::new_spanned(
            lit,
            format!("`{arg}` cannot be blank (X_JOB_DECLARATION_INVALID)"),
        ));
    }
    Ok(lit.clone())
}

/// A boolean literal (`dead_letter`).
pub fn flag(expr: &Expr, arg: &str) -> syn::Result<bool> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Ok(b.value),
        _ => Err(syn::Error::new_spanned(
            expr,
            format!(
                "`{arg}` takes `true` or `false`, found `{}` (X_JOB_DECLARATION_INVALID)",
                shown(expr)
            ),
        )),
    }
}

/// A path to a function (`on_settled = hooks::welcome_settled`).
pub fn fn_path(expr: &Expr, arg: &str) -> syn::Result<Path> {
    match expr {
        Expr::Path(path) if path.qself.is_none() => Ok(path.path.clone()),
        _ => Err(syn::Error::new_spanned(
            expr,
            format!(
                "`{arg}` takes the path of an async fn, e.g. `{arg} = welcome_settled` \
                 (X_JOB_DECLARATION_INVALID)"
            ),
        )),
    }
}

/// An identifier to name a generated item (`handle = SendWelcome`).
pub fn ident(expr: &Expr, arg: &str) -> syn::Result<Ident> {
    if let Some(ident) = word(expr) {
        return Ok(ident.clone());
    }
    let hint = match lit_str(expr).map(|lit| lit.value()) {
        Some(text) if syn::parse_str::<Ident>(&text).is_ok() => {
            format!("write `{arg} = {text}` without quotes")
        }
        _ => format!("e.g. `{arg} = SendWelcome`"),
    };
    Err(syn::Error::new_spanned(
        expr,
        format!("`{arg}` takes a type name: {hint} (X_JOB_DECLARATION_INVALID)"),
    ))
}

/// The runtime crate's path as a string (`crate = "::jobs"`).
pub fn crate_path(expr: &Expr) -> syn::Result<Path> {
    let bad = || {
        syn::Error::new_spanned(
            expr,
            "`crate` takes the runtime crate's path as a string, e.g. `crate = \"::jobs\"` \
             (X_JOB_DECLARATION_INVALID)",
        )
    };
    let lit = lit_str(expr).ok_or_else(bad)?;
    lit.parse::<Path>().map_err(|_| bad())
}
