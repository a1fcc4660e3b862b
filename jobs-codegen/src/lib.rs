//! Turns the jobs manifest into committed files, and checks that a committed copy is fresh.
//!
//! A user's crate adds a three-line binary so that `cargo run --bin manifest` prints the
//! manifest of every job it declares:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     jobs_codegen::manifest_main(std::env::args().skip(1))
//! }
//! ```

#![warn(missing_docs)]

mod manifest_json;

pub use manifest_json::{check, manifest_json, CheckResult};

use std::process::ExitCode;

/// The `manifest` binary: prints the manifest, or with `--check FILE` exits 1 when `FILE` is
/// not byte-for-byte what the code declares now (and 2 on a usage or registry error).
pub fn manifest_main(args: impl IntoIterator<Item = String>) -> ExitCode {
    let args: Vec<String> = args.into_iter().collect();
    let manifest = match jobs::manifest() {
        Ok(manifest) => manifest,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let text = manifest_json(&manifest);
    match args.as_slice() {
        [] => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        [flag, path] if flag == "--check" => match check(std::path::Path::new(path), &text) {
            CheckResult::Fresh => ExitCode::SUCCESS,
            CheckResult::Stale { first_difference } => {
                eprintln!(
                    "error: {path} is stale (first difference at line {first_difference}); \
                     regenerate it with `cargo run --bin manifest > {path}` and commit it"
                );
                ExitCode::FAILURE
            }
            CheckResult::Unreadable(why) => {
                eprintln!("error: cannot read {path}: {why}; generate it with `cargo run --bin manifest > {path}`");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("usage: manifest [--check FILE]");
            ExitCode::from(2)
        }
    }
}
