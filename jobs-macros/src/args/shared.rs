//! What every attribute's arguments share: the raw value holder and the wording of darling's
//! structural errors.

use darling::ast::NestedMeta;
use darling::FromMeta;
use proc_macro2::TokenStream;

/// A value as written (`key = "welcome:{user_id}"`, `tenant = org_id`, `attempts = 0`), kept
/// untouched so a later stage can parse it and point at it.
///
/// darling's own `syn::Expr` parser reads a string literal as code; this one never does.
#[derive(Debug, Clone)]
pub struct Raw(pub syn::Expr);

impl FromMeta for Raw {
    fn from_expr(expr: &syn::Expr) -> darling::Result<Self> {
        match expr {
            // An invisible group appears when the attribute comes out of a `macro_rules!`.
            syn::Expr::Group(group) => Self::from_expr(&group.expr),
            _ => Ok(Raw(expr.clone())),
        }
    }
}

/// Rewords darling's structural errors (an unknown, duplicated or malformed argument) in the
/// voice of the rest of the macro: lower-case, the argument as written, what to do next.
///
/// `arguments` lists the accepted arguments for each place (`""` for the top level, then
/// `"retry"`, `"concurrency"`), for an unknown argument with no near miss. darling's error
/// kinds are not public, so this reads its messages; one it does not recognise keeps its text
/// with a lower-case first letter.
pub fn voice(err: darling::Error, attr: &str, arguments: &[(&str, &[&str])]) -> darling::Error {
    darling::Error::multiple(
        err.flatten()
            .into_iter()
            .map(|one| {
                let span = one.span();
                let text = one.to_string();
                let (message, location) = split_location(&text);
                let reworded = reword(message, location, attr, arguments);
                darling::Error::custom(reworded).with_span(&span)
            })
            .collect(),
    )
}

/// Splits darling's trailing ` at retry` (where in the attribute the error is) off a message.
fn split_location(text: &str) -> (&str, &str) {
    match text.rsplit_once(" at ") {
        Some((message, location))
            if !location.is_empty()
                && location
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || c == '/') =>
        {
            (message, location)
        }
        _ => (text, ""),
    }
}

fn reword(message: &str, location: &str, attr: &str, arguments: &[(&str, &[&str])]) -> String {
    format!("{} {CODE}", reworded(message, location, attr, arguments))
}

/// The code every structural refusal carries: the declaration cannot be honoured as written.
const CODE: &str = "(X_JOB_DECLARATION_INVALID)";

fn reworded(message: &str, location: &str, attr: &str, arguments: &[(&str, &[&str])]) -> String {
    // The place an argument sits in: `#[job]` or `retry(..)` inside it.
    let (place, nested) = match location.split('/').next().unwrap_or("") {
        "" => (format!("`#[{attr}]`"), ""),
        outer => (format!("`{outer}(..)`"), outer),
    };
    let field = location.rsplit('/').next().unwrap_or("");
    let expected = arguments
        .iter()
        .find(|(at, _)| *at == nested)
        .map(|(_, names)| list(names))
        .unwrap_or_default();

    if let Some(rest) = message.strip_prefix("Unknown field: `") {
        let name = rest.split('`').next().unwrap_or(rest);
        if let Some(suggestion) = rest.split("Did you mean `").nth(1) {
            let suggestion = suggestion.split('`').next().unwrap_or(suggestion);
            return format!("unknown argument `{name}` in {place}; did you mean `{suggestion}`?");
        }
        return format!(
            "unknown argument `{name}` in {place}: remove it, or use one of {expected}"
        );
    }
    if let Some(rest) = message.strip_prefix("Duplicate field `") {
        let name = rest.split('`').next().unwrap_or(rest);
        return format!("`{name}` is set twice in {place}; keep one and remove the other");
    }
    if let Some(rest) = message.strip_prefix("Unexpected meta-item format `") {
        let format = rest.split('`').next().unwrap_or(rest);
        let shown = if field.is_empty() {
            "this argument"
        } else {
            field
        };
        return match format {
            "word" => format!("`{shown}` needs a value: write `{shown} = ..`"),
            "list" => format!("`{shown}` takes a value, not a list: write `{shown} = ..`"),
            _ => format!("`{shown}` takes a list: write `{shown}(..)`"),
        };
    }
    if message.starts_with("Unexpected literal type") {
        return format!(
            "expected an argument such as `name = ..` in {place}, found a bare literal"
        );
    }
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The arguments' tokens as a list of `name = value` items, or an error that says how to
/// write them (a stray token, a missing comma), with the code.
pub fn meta_list(tokens: TokenStream, attr: &str) -> syn::Result<Vec<NestedMeta>> {
    NestedMeta::parse_meta_list(tokens).map_err(|err| {
        syn::Error::new(
            err.span(),
            format!(
                "cannot read the arguments of `#[{attr}]`: {err}; write them as \
                 `name = value` pairs separated by commas {CODE}"
            ),
        )
    })
}

/// `handle = ..` and `crate = ..` read from arguments that did not all parse, so a refused
/// declaration still names its stand-in handle as the user did.
pub fn recover_names(tokens: TokenStream) -> (Option<syn::Ident>, Option<syn::Path>) {
    let Ok(items) = NestedMeta::parse_meta_list(tokens) else {
        return (None, None);
    };
    let mut handle = None;
    let mut krate = None;
    for item in &items {
        let NestedMeta::Meta(syn::Meta::NameValue(nv)) = item else {
            continue;
        };
        if nv.path.is_ident("handle") {
            handle = crate::value::word(&nv.value).cloned();
        } else if nv.path.is_ident("crate") {
            krate = crate::value::text::crate_path(&nv.value).ok();
        }
    }
    (handle, krate)
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

/// The name of an argument (`priority` in `priority = 1`, `retry` in `retry(..)`), if it is a
/// plain identifier.
pub fn arg_name(item: &NestedMeta) -> Option<String> {
    let NestedMeta::Meta(meta) = item else {
        return None;
    };
    meta.path().get_ident().map(ToString::to_string)
}
