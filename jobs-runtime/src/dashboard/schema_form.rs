//! The enqueue form of a job, built from its input's JSON Schema: one field per top-level
//! property (a text, number or checkbox input, a choice for an enum, JSON for anything nested),
//! with the browser's own validation (`required`, `type`, `min`), and the input read back from
//! the posted form with the schema's types. The job's own deserialization then has the last
//! word before anything is sent.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{ErrorCode, JobError};

/// One input of the form.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Field {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean`, `choice` or `json`.
    pub kind: &'static str,
    pub required: bool,
    /// A choice's values.
    pub choices: Vec<String>,
    /// The least number allowed, when the schema states one.
    pub minimum: Option<serde_json::Number>,
    pub description: Option<String>,
}

/// The fields of an object schema (none for another shape: the form is then one JSON input).
pub(crate) fn fields(schema: &Value) -> Vec<Field> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields: Vec<Field> = properties
        .iter()
        .map(|(name, property)| {
            let (kind, nullable) = kind_of(property);
            let choices = property
                .get("enum")
                .and_then(Value::as_array)
                .map(|values| {
                    values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            Field {
                name: name.clone(),
                kind,
                required: required.contains(&name.as_str()) && !nullable,
                choices,
                minimum: property.get("minimum").and_then(|m| m.as_number().cloned()),
                description: property
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            }
        })
        .collect();
    // The required fields first, each group in the schema's order.
    fields.sort_by_key(|f| !f.required);
    fields
}

/// A property's input kind, and whether it may be null.
fn kind_of(property: &Value) -> (&'static str, bool) {
    if property
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|e| e.iter().all(Value::is_string))
    {
        return ("choice", false);
    }
    let types: Vec<&str> = match property.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let nullable = types.contains(&"null");
    let kind = match types.iter().find(|t| **t != "null") {
        Some(&"string") => "string",
        Some(&"integer") => "integer",
        Some(&"number") => "number",
        Some(&"boolean") => "boolean",
        _ => "json",
    };
    (kind, nullable)
}

fn invalid(field: &str, expected: &str) -> JobError {
    // The field and what it needs, never what was typed.
    JobError::new(
        ErrorCode::JobInputInvalid,
        format!("field `{field}` of the enqueue form is not {expected}"),
    )
    .with_fix("fill in the form as its schema asks; each field states its type")
}

fn missing(field: &str) -> JobError {
    JobError::new(
        ErrorCode::JobInputInvalid,
        format!("field `{field}` of the enqueue form is required and was not filled in"),
    )
    .with_fix(format!(
        "fill in `{field}` (the fields marked * are required; blanks alone do not count)"
    ))
}

/// The input the posted `form` (name, value pairs) stands for. With no fields, the whole input
/// is the JSON of the `input` field.
pub(crate) fn read(fields: &[Field], form: &[(String, String)]) -> Result<Value, JobError> {
    let value_of = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    if fields.is_empty() {
        let text = value_of("input").unwrap_or("{}");
        return serde_json::from_str(text).map_err(|_| invalid("input", "JSON"));
    }
    let mut input = Map::new();
    for field in fields {
        let key = format!("f.{}", field.name);
        let raw = value_of(&key);
        let value = match (field.kind, raw) {
            ("boolean", raw) => Value::Bool(raw.is_some_and(|v| v == "on" || v == "true")),
            (_, None) | (_, Some("")) if field.kind != "string" || !field.required => {
                if field.required {
                    return Err(missing(&field.name));
                }
                continue;
            }
            (_, None) => return Err(missing(&field.name)),
            // A required text holds more than blanks: an empty string is no value.
            ("string", Some(v)) if field.required && v.trim().is_empty() => {
                return Err(missing(&field.name))
            }
            ("integer", Some(v)) => v
                .trim()
                .parse::<i64>()
                .map(Value::from)
                .or_else(|_| v.trim().parse::<u64>().map(Value::from))
                .map_err(|_| invalid(&field.name, "a whole number"))?,
            ("number", Some(v)) => v
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| invalid(&field.name, "a number"))?,
            ("json", Some(v)) => {
                serde_json::from_str(v).map_err(|_| invalid(&field.name, "JSON"))?
            }
            ("choice", Some(v)) if !field.choices.iter().any(|c| c == v) => {
                return Err(invalid(&field.name, "one of its choices"))
            }
            (_, Some(v)) => Value::String(v.to_string()),
        };
        input.insert(field.name.clone(), value);
    }
    Ok(Value::Object(input))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "user_id": { "type": "integer", "minimum": 0 },
                "org": { "type": "string" },
                "note": { "type": ["string", "null"] },
                "vip": { "type": "boolean" },
                "plan": { "enum": ["free", "pro"] },
                "tags": { "type": "array", "items": { "type": "string" } }
            },
            "required": ["user_id", "org", "vip", "plan", "tags"]
        })
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_form_reads_back_as_typed_input() {
        let fields = fields(&schema());
        assert_eq!(fields.len(), 6);
        let input = read(
            &fields,
            &pairs(&[
                ("f.user_id", "7"),
                ("f.org", "acme"),
                ("f.note", ""),
                ("f.vip", "on"),
                ("f.plan", "pro"),
                ("f.tags", "[\"a\"]"),
            ]),
        )
        .unwrap();
        assert_eq!(
            input,
            json!({ "user_id": 7, "org": "acme", "vip": true, "plan": "pro", "tags": ["a"] })
        );
    }

    #[test]
    fn a_bad_field_is_named_without_its_value() {
        let fields = fields(&schema());
        let e = read(
            &fields,
            &pairs(&[
                ("f.user_id", "seven-secret"),
                ("f.org", "a"),
                ("f.plan", "pro"),
                ("f.tags", "[]"),
            ]),
        )
        .unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::JobInputInvalid));
        assert!(e.message().contains("user_id") && !e.message().contains("seven-secret"));
        let e = read(&fields, &pairs(&[("f.user_id", "1")])).unwrap_err();
        assert!(e.message().contains("`org`"), "{}", e.message());
        // A required text left empty, or blank, is not filled in.
        for blank in ["", "   "] {
            let e = read(
                &fields,
                &pairs(&[
                    ("f.user_id", "1"),
                    ("f.org", blank),
                    ("f.plan", "pro"),
                    ("f.tags", "[]"),
                ]),
            )
            .unwrap_err();
            assert!(e.message().contains("`org`") && e.message().contains("not filled in"));
        }
    }
}
