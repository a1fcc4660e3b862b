//! The manifest as committed JSON, and the staleness check CI runs.

use std::path::Path;

use crate::Manifest;

/// The manifest's committed form: pretty JSON, keys sorted, jobs sorted by name, final newline.
pub fn manifest_json(manifest: &Manifest) -> String {
    manifest.to_json()
}

/// What `--check` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckResult {
    /// The file is exactly what the code declares.
    Fresh,
    /// The file differs; the first differing line, from 1.
    Stale {
        /// The first line that differs.
        first_difference: usize,
    },
    /// The file cannot be read.
    Unreadable(String),
}

/// Compares the committed file at `path` with `expected`.
pub fn check(path: &Path, expected: &str) -> CheckResult {
    let committed = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => return CheckResult::Unreadable(e.to_string()),
    };
    if committed == expected {
        return CheckResult::Fresh;
    }
    let first_difference = committed
        .lines()
        .zip(expected.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| committed.lines().count().min(expected.lines().count()))
        + 1;
    CheckResult::Stale { first_difference }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_reports_fresh_stale_and_missing() {
        let dir = std::env::temp_dir().join(format!("jobs-codegen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("manifest.json");
        std::fs::write(&path, "{\n  \"a\": 1\n}\n").unwrap();
        assert_eq!(check(&path, "{\n  \"a\": 1\n}\n"), CheckResult::Fresh);
        assert_eq!(
            check(&path, "{\n  \"a\": 2\n}\n"),
            CheckResult::Stale {
                first_difference: 2
            }
        );
        assert!(matches!(
            check(&dir.join("missing.json"), "{}"),
            CheckResult::Unreadable(_)
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
