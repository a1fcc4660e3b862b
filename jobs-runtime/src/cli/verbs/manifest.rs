//! `jobs manifest`: the manifest and the generated outputs of the jobs linked into this binary
//! (printed, written, or checked against a committed copy). It needs no database.

use std::io::Write;

use crate::error::ErrorCode;

use crate::cli::args::ManifestArgs;
use crate::cli::EXIT_REFUSED;

/// Answers the exit code itself rather than a `Result`: the manifest command decides it (a
/// stale `--check` is exit 1 with its own report).
pub(in crate::cli) fn manifest(args: ManifestArgs, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    use crate::codegen::{manifest_command, ManifestAction};
    let manifest = match crate::manifest() {
        Ok(manifest) => manifest,
        Err(error) => {
            let code = error.code().map_or("X_ERROR", ErrorCode::as_str);
            let _ = writeln!(err, "error: {code}: {}", error.message());
            return EXIT_REFUSED;
        }
    };
    let action = match (args.out, args.check, args.print) {
        (Some(dir), _, _) => ManifestAction::Write(dir),
        (_, Some(path), _) => ManifestAction::Check(path),
        (_, _, Some(file)) => ManifestAction::PrintOutput(file),
        _ => ManifestAction::Print,
    };
    let command = std::env::args()
        .next()
        .and_then(|p| {
            std::path::Path::new(&p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "jobs".into());
    manifest_command(
        &manifest,
        &action,
        args.allow_empty,
        &format!("{command} manifest"),
        out,
        err,
    )
}
