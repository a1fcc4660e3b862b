//! Key templates: `key = "welcome:{user_id}"`, `concurrency(key = "{org_id}")`.
//!
//! A template is literal text with `{field}` placeholders naming fields of the input
//! (`{user_id}`, `{0}` for a tuple struct, `{account.id}` for a nested field); `{{` and `}}`
//! are literal braces. The placeholders are checked here for shape only: whether the input
//! has the field is left to rustc, which reads `input.<field>` spanned at the literal and
//! says "no field `x` on type `&Welcome`" right there (seed-inventory §30 item 8).

use proc_macro2::Span;
use syn::{Ident, Index, LitStr, Member};

/// A parsed key template.
#[derive(Debug, Clone)]
pub struct KeyTemplate {
    /// The literal as written; generated field reads carry its span.
    pub lit: LitStr,
    /// Text and placeholders, in order.
    pub segments: Vec<Segment>,
}

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// Literal text, braces already unescaped.
    Text(String),
    /// `{a.b}`: a field path into the input.
    Field(Vec<Member>),
}

impl KeyTemplate {
    /// Parses the template `lit` given to `arg` (`key`, `concurrency(key)`).
    pub fn parse(lit: &LitStr, arg: &str) -> syn::Result<Self> {
        let text = lit.value();
        let span = lit.span();
        let error = |why: String| {
            syn::Error::new(
                span,
                format!("invalid `{arg}` template `{text}`: {why} (X_JOB_DECLARATION_INVALID)"),
            )
        };
        if text.is_empty() {
            return Err(error(
                "a key cannot be empty; name the input fields that identify the work, \
                 e.g. \"welcome:{user_id}\""
                    .into(),
            ));
        }
        let mut segments = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => {
                    return Err(error(
                        "unmatched `}`; write `}}` for a literal brace".into(),
                    ))
                }
                '{' => {
                    let mut name = String::new();
                    let mut closed = false;
                    for c in chars.by_ref() {
                        if c == '}' {
                            closed = true;
                            break;
                        }
                        name.push(c);
                    }
                    if !closed {
                        return Err(error(format!(
                            "unclosed `{{{name}`; close it with `}}`, or write `{{{{` for a \
                             literal brace"
                        )));
                    }
                    if name.is_empty() {
                        return Err(error(
                            "`{}` names no field; name a field of the input, e.g. `{user_id}`"
                                .into(),
                        ));
                    }
                    let path = field_path(&name, span).ok_or_else(|| {
                        error(format!(
                            "`{{{name}}}` is not a field name; a placeholder names a field of \
                             the input, e.g. `{{user_id}}`, `{{0}}` or `{{account.id}}`"
                        ))
                    })?;
                    if !literal.is_empty() {
                        segments.push(Segment::Text(std::mem::take(&mut literal)));
                    }
                    segments.push(Segment::Field(path));
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            segments.push(Segment::Text(literal));
        }
        Ok(KeyTemplate {
            lit: lit.clone(),
            segments,
        })
    }

    /// The `format!` string: literal text with braces escaped again, `{}` per placeholder.
    pub fn format_string(&self) -> String {
        self.segments
            .iter()
            .map(|segment| match segment {
                Segment::Text(text) => text.replace('{', "{{").replace('}', "}}"),
                Segment::Field(_) => "{}".to_owned(),
            })
            .collect()
    }

    /// The placeholders' field paths, in order.
    pub fn fields(&self) -> impl Iterator<Item = &[Member]> {
        self.segments.iter().filter_map(|segment| match segment {
            Segment::Field(path) => Some(path.as_slice()),
            Segment::Text(_) => None,
        })
    }
}

/// `account.id` as members spanned at the template, or `None` if it is not a field path.
fn field_path(name: &str, span: Span) -> Option<Vec<Member>> {
    name.split('.').map(|part| member(part, span)).collect()
}

fn member(text: &str, span: Span) -> Option<Member> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let index = text.parse().ok()?;
        return Some(Member::Unnamed(Index { index, span }));
    }
    let mut chars = text.chars();
    let first = chars.next()?;
    let identifier = (first.is_alphabetic() || first == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
        && text != "_";
    if !identifier {
        return None;
    }
    match syn::parse_str::<Ident>(text) {
        Ok(mut ident) => {
            ident.set_span(span);
            Some(Member::Named(ident))
        }
        // A keyword (`type`) is a field only in its raw form.
        Err(_) if !matches!(text, "self" | "Self" | "super" | "crate") => {
            Some(Member::Named(Ident::new_raw(text, span)))
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> syn::Result<KeyTemplate> {
        KeyTemplate::parse(&LitStr::new(text, Span::call_site()), "key")
    }

    #[test]
    fn placeholders_and_escapes() {
        let template = parse("welcome:{user_id}:{{x}}:{0}:{a.b}").unwrap();
        assert_eq!(template.format_string(), "welcome:{}:{{x}}:{}:{}");
        assert_eq!(template.fields().count(), 3);
    }

    #[test]
    fn text_only() {
        let template = parse("singleton").unwrap();
        assert_eq!(template.format_string(), "singleton");
        assert_eq!(template.fields().count(), 0);
    }

    #[test]
    fn malformed_templates_are_refused() {
        for (text, why) in [
            ("welcome:{user_id", "unclosed `{user_id`"),
            ("welcome:}", "unmatched `}`"),
            ("welcome:{}", "`{}` names no field"),
            ("welcome:{user id}", "`{user id}` is not a field name"),
            ("welcome:{user_id:?}", "is not a field name"),
            ("", "a key cannot be empty"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(why), "{text:?}: {err}");
        }
    }
}
