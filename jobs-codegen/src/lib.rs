//! Turns the jobs manifest into committed files, and checks that committed copies are fresh.
//!
//! One module per output, each a pure function from the runtime's [`Manifest`] to text,
//! sorted and byte-stable:
//!
//! | file | function | what |
//! |---|---|---|
//! | `manifest.json` | [`manifest_json`] | the manifest: every job and task as declared |
//! | `schemas.json` | [`json_schema`] | a JSON Schema bundle of every input, `$defs` keyed by job name |
//! | `mcp-tools.json` | [`mcp_tools`] | an MCP `tools/list`: the read tools and one enqueue tool per job |
//! | `jobs.ts` | [`client_types`] | TypeScript types for enqueuing from a non-Rust service |
//! | `JOBS.md` | [`docs`] | a Markdown table of jobs and tasks |
//!
//! A user's crate adds a three-line binary so that `cargo run --bin manifest` prints the
//! manifest of every job it declares, `--out DIR` writes every output, and `--check DIR`
//! (or `--check FILE`) fails when a committed copy is stale:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     jobs_codegen::manifest_main(std::env::args().skip(1))
//! }
//! ```
//!
//! With the `mcp` feature, the `mcp` module serves the manifest and the operator's read
//! verbs over stdio to an MCP client (`jobs_codegen::mcp::mcp_main`).

#![warn(missing_docs)]

mod client_types;
mod docs;
mod json_schema;
mod manifest_json;
pub mod mcp_tools;
mod text;

#[cfg(feature = "mcp")]
pub mod mcp;

pub use client_types::client_types;
pub use docs::docs;
pub use json_schema::{input_id, json_schema, schema_bundle};
pub use manifest_json::{check, manifest_json, CheckResult};
pub use mcp_tools::{mcp_tools, tool_list};

use std::path::Path;
use std::process::ExitCode;

use jobs::Manifest;

/// One generated file: its name, and the function that writes it.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// The file name inside the output directory.
    pub file: &'static str,
    /// Renders the file from the manifest.
    pub render: fn(&Manifest) -> String,
}

/// Every output, in the order `--out` writes them.
pub const OUTPUTS: [Output; 5] = [
    Output {
        file: "manifest.json",
        render: manifest_json,
    },
    Output {
        file: "schemas.json",
        render: json_schema,
    },
    Output {
        file: "mcp-tools.json",
        render: mcp_tools,
    },
    Output {
        file: "jobs.ts",
        render: client_types,
    },
    Output {
        file: "JOBS.md",
        render: docs,
    },
];

/// Writes every output into `dir` (created if missing).
pub fn write_all(dir: &Path, manifest: &Manifest) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for output in OUTPUTS {
        std::fs::write(dir.join(output.file), (output.render)(manifest))?;
    }
    Ok(())
}

/// Checks every output committed in `dir`: one result per file, in [`OUTPUTS`] order.
pub fn check_all(dir: &Path, manifest: &Manifest) -> Vec<(&'static str, CheckResult)> {
    OUTPUTS
        .iter()
        .map(|output| {
            let expected = (output.render)(manifest);
            (output.file, check(&dir.join(output.file), &expected))
        })
        .collect()
}

/// The output a committed file holds, by its file name; the manifest for any other name.
fn output_for(path: &Path) -> Output {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    OUTPUTS
        .into_iter()
        .find(|o| o.file == name)
        .unwrap_or(OUTPUTS[0])
}

const USAGE: &str = "usage: manifest [--out DIR | --check DIR | --check FILE | --print FILE]\n  \
    (no flag)       print the manifest JSON\n  \
    --out DIR       write manifest.json, schemas.json, mcp-tools.json, jobs.ts and JOBS.md into DIR\n  \
    --check DIR     exit 1 when any of them in DIR is not what the code declares now\n  \
    --check FILE    the same for one file (its name picks the output; any other name is the manifest)\n  \
    --print FILE    print one output (manifest.json, schemas.json, mcp-tools.json, jobs.ts, JOBS.md)";

/// The `manifest` binary: prints the manifest; `--out DIR` writes every output; `--check DIR`
/// or `--check FILE` exits 1 when a committed copy is not byte-for-byte what the code declares
/// now (and 2 on a usage or registry error).
pub fn manifest_main(args: impl IntoIterator<Item = String>) -> ExitCode {
    let args: Vec<String> = args.into_iter().collect();
    let manifest = match jobs::manifest() {
        Ok(manifest) => manifest,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    run(&manifest, &args)
}

/// [`manifest_main`] over a given manifest.
pub fn run(manifest: &Manifest, args: &[String]) -> ExitCode {
    match args {
        [] => {
            print!("{}", manifest_json(manifest));
            ExitCode::SUCCESS
        }
        [flag, dir] if flag == "--out" => match write_all(Path::new(dir), manifest) {
            Ok(()) => {
                for output in OUTPUTS {
                    eprintln!("wrote {}", Path::new(dir).join(output.file).display());
                }
                ExitCode::SUCCESS
            }
            Err(why) => {
                eprintln!("error: cannot write into {dir}: {why}");
                ExitCode::FAILURE
            }
        },
        [flag, file] if flag == "--print" => match OUTPUTS.iter().find(|o| o.file == file) {
            Some(output) => {
                print!("{}", (output.render)(manifest));
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("error: no output named {file}\n{USAGE}");
                ExitCode::from(2)
            }
        },
        [flag, path] if flag == "--check" => {
            let target = Path::new(path);
            let (results, regenerate) = if target.is_dir() {
                (
                    check_all(target, manifest)
                        .into_iter()
                        .map(|(file, result)| (target.join(file).display().to_string(), result))
                        .collect::<Vec<_>>(),
                    format!("cargo run --bin manifest -- --out {path}"),
                )
            } else {
                let output = output_for(target);
                let expected = (output.render)(manifest);
                (
                    vec![(path.clone(), check(target, &expected))],
                    format!(
                        "cargo run --bin manifest -- --print {} > {path}",
                        output.file
                    ),
                )
            };
            let mut fresh = true;
            for (file, result) in results {
                match result {
                    CheckResult::Fresh => {}
                    CheckResult::Stale { first_difference } => {
                        fresh = false;
                        eprintln!(
                            "error: {file} is stale (first difference at line {first_difference}); \
                             regenerate it with `{regenerate}` and commit it"
                        );
                    }
                    CheckResult::Unreadable(why) => {
                        fresh = false;
                        eprintln!(
                            "error: cannot read {file}: {why}; generate it with `{regenerate}`"
                        );
                    }
                }
            }
            if fresh {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
