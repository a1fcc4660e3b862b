//! Byte-stable text: sorted keys, two-space indentation, one final newline.

use serde_json::Value;

pub(crate) use crate::manifest::sorted;

/// Pretty JSON of an already sorted value, with a final newline.
pub(crate) fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("a JSON value always serializes");
    text.push('\n');
    text
}
