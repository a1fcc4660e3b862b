//! How a verb's answer reaches the terminal: JSON text and the write. Shared by every verb,
//! apart from the tables (`render.rs`), which are per verb.

use std::io::Write;

use crate::error::{ErrorCode, JobError};

pub(super) fn emit(out: &mut dyn Write, text: &str) -> Result<(), JobError> {
    out.write_all(text.as_bytes())
        .map_err(|e| JobError::new(ErrorCode::Invariant, format!("cannot write: {e}")))
}

pub(super) fn to_json(value: &impl serde::Serialize) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}
