//! Typed values, one kind of literal per file. darling reads each argument into an [`Arg`] of
//! its typed value ([`Value`]); a value that does not read says what it accepts, at the user's
//! tokens.

pub mod backoff;
pub mod book;
pub mod catch_up;
pub mod count;
pub mod cron;
pub mod dependency_failure;
pub mod duration;
pub mod jitter;
pub mod key;
pub mod key_template;
pub mod posting;
pub mod priority;
pub mod rails;
pub mod rate;
pub mod scope;
pub mod tenant;
pub mod text;
pub mod tz;
pub mod when_busy;

use darling::FromMeta;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Meta};

/// A typed argument value: what the tokens after `arg =` mean.
pub trait Value: Sized {
    /// Reads `expr`, the value given to the argument `arg` (`timeout`, `attempts`), or refuses
    /// it at the user's tokens with the rule it breaks and its code.
    fn parse(expr: &Expr, arg: &str) -> syn::Result<Self>;

    /// The value of the argument written as a bare word (`keep_result`), for a value that has
    /// one; `None`: the bare word is a wrong shape.
    fn word() -> Option<Self> {
        None
    }
}

/// One `arg = value` as darling read it: the value's tokens, and the typed value or its
/// refusal.
///
/// The refusal is kept here instead of failing darling's parse, so one bad value never hides
/// which other arguments were given (a `key` that does not read is not also reported missing),
/// and it stays a `syn::Error`, which underlines every token of the value: a darling error
/// holds one span, which on stable Rust is only the first token's.
#[derive(Debug, Clone)]
pub struct Arg<T> {
    tokens: Expr,
    value: Result<T, syn::Error>,
}

impl<T> Arg<T> {
    /// The typed value, when it read.
    pub fn ok(&self) -> Option<&T> {
        self.value.as_ref().ok()
    }

    /// The refusal, when it did not.
    pub fn err(&self) -> Option<&syn::Error> {
        self.value.as_ref().err()
    }

    /// The value as written, for a rule that blames it.
    pub fn tokens(&self) -> &Expr {
        &self.tokens
    }
}

impl<T: Value> FromMeta for Arg<T> {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        if let (Meta::Path(path), Some(value)) = (item, T::word()) {
            return Ok(Arg {
                tokens: Expr::Path(syn::ExprPath {
                    attrs: Vec::new(),
                    qself: None,
                    path: path.clone(),
                }),
                value: Ok(value),
            });
        }
        let Meta::NameValue(nv) = item else {
            // `timeout` or `timeout(..)`: a wrong shape, which darling words itself.
            let format = if matches!(item, Meta::Path(_)) {
                "word"
            } else {
                "list"
            };
            return Err(darling::Error::unsupported_format(format).with_span(item));
        };
        let arg = darling::util::path_to_string(&nv.path);
        let tokens = ungrouped(&nv.value).clone();
        Ok(Arg {
            value: T::parse(&tokens, &arg),
            tokens,
        })
    }
}

/// `expr` without the invisible groups a `macro_rules!` wraps around what it passes on.
fn ungrouped(expr: &Expr) -> &Expr {
    match expr {
        Expr::Group(group) => ungrouped(&group.expr),
        _ => expr,
    }
}

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
            list(&names),
        ),
    ))
}

/// `a`, `b` or `c`.
pub fn list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}
