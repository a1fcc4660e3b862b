//! Plain string and flag arguments: `name = "send-welcome"`, `queue = "email"`,
//! `dead_letter = false`, `crate = "::jobs"`, and the path/ident arguments `on_settled` and
//! `handle`.

use syn::{Expr, ExprLit, Ident, Lit, LitStr, Path};

use super::{lit_str, shown, word, Value};

/// A name the job system stores (`name`, `queue`, a purge's `task`): a string literal in the
/// name grammar (`jobs_grammar::name::check_name`), the rule the runtime applies to the same
/// value at enqueue, so a name that compiles is never refused later.
#[derive(Debug, Clone)]
pub struct Text(pub String);

impl Value for Text {
    fn parse(expr: &Expr, arg: &str) -> syn::Result<Self> {
        let lit = non_blank(expr, arg)?;
        let value = lit.value();
        jobs_grammar::name::check_name(&value).map_err(|why| {
            let fix = if why.is_too_long() {
                "shorten it; every enqueue would be refused with X_LIMIT_EXCEEDED".to_string()
            } else {
                format!(
                    "write it as {} (e.g. `{arg} = \"{}\"`)",
                    jobs_grammar::name::NAME_GRAMMAR,
                    suggestion(&value)
                )
            };
            syn::Error::new_spanned(
                &lit,
                format!("`{arg}` {why}: {fix} (X_JOB_DECLARATION_INVALID)"),
            )
        })?;
        Ok(Text(value))
    }
}

/// A name in the grammar near `value`: lower-case, each run of other characters one `_`, cut
/// to the limit (`"Bad Queue!"` -> `bad_queue`).
fn suggestion(value: &str) -> String {
    let mut out = String::new();
    for c in value.chars() {
        if c.is_ascii_alphanumeric() || (!out.is_empty() && (c == '-' || c == '.')) {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let mut out = out.trim_matches('_').to_string();
    if out.is_empty() {
        out.push_str("name");
    }
    out.truncate(jobs_grammar::name::MAX_NAME_BYTES);
    out
}

/// `true` or `false` (`dead_letter`).
#[derive(Debug, Clone, Copy)]
pub struct Flag(pub bool);

impl Value for Flag {
    fn parse(expr: &Expr, arg: &str) -> syn::Result<Self> {
        flag(expr, arg).map(Flag)
    }
}

/// An argument that is on when written: a bare word (`keep_result`), or `keep_result = true` /
/// `keep_result = false` for a declaration that computes it in a macro of its own.
#[derive(Debug, Clone, Copy)]
pub struct Switch(pub bool);

impl Value for Switch {
    fn parse(expr: &Expr, arg: &str) -> syn::Result<Self> {
        flag(expr, arg).map(Switch)
    }

    fn word() -> Option<Self> {
        Some(Switch(true))
    }
}

/// The path of a fn (`on_settled`, `source`).
#[derive(Debug, Clone)]
pub struct FnPath(pub Path);

impl Value for FnPath {
    fn parse(expr: &Expr, arg: &str) -> syn::Result<Self> {
        fn_path(expr, arg).map(FnPath)
    }
}

/// The name of a generated type (`handle`).
#[derive(Debug, Clone)]
pub struct TypeName(pub Ident);

impl Value for TypeName {
    fn parse(expr: &Expr, arg: &str) -> syn::Result<Self> {
        ident(expr, arg).map(TypeName)
    }
}

/// The runtime crate's path (`crate = "::jobs"`).
#[derive(Debug, Clone)]
pub struct CratePath(pub Path);

impl Value for CratePath {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        crate_path(expr).map(CratePath)
    }
}

/// A non-blank string literal (`name`, `queue`).
fn non_blank(expr: &Expr, arg: &str) -> syn::Result<LitStr> {
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
fn flag(expr: &Expr, arg: &str) -> syn::Result<bool> {
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
fn fn_path(expr: &Expr, arg: &str) -> syn::Result<Path> {
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
fn ident(expr: &Expr, arg: &str) -> syn::Result<Ident> {
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
fn crate_path(expr: &Expr) -> syn::Result<Path> {
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
