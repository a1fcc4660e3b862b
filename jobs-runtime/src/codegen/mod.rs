//! Turns the jobs manifest into committed files, and checks that committed copies are fresh.
//!
//! One module per output, each a pure function from the runtime's [`Manifest`] to text,
//! sorted and byte-stable:
//!
//! | file | function | what |
//! |---|---|---|
//! | `manifest.json` | [`manifest_json`] | the manifest: every job and task as declared |
//! | `schemas.json` | [`json_schema`] | a JSON Schema bundle of every input, `$defs` keyed by job name |
//! | `mcp-tools.json` | [`mcp_tools()`] | an MCP `tools/list`: the read tools and one enqueue tool per job |
//! | `jobs.ts` | [`client_types`] | TypeScript types for enqueuing from a non-Rust service |
//! | `JOBS.md` | [`docs`] | a Markdown table of jobs and tasks |
//!
//! A user's crate reaches them through its own operator binary (see [`crate::cli`]): `jobs
//! manifest` prints the manifest of every job linked into that binary, `--out DIR` writes every
//! output, and `--check DIR` (or `--check FILE`) fails when a committed copy is stale. A
//! manifest with no jobs is refused (`X_REGISTRAR_MISSING`) unless `--allow-empty` asks for it:
//! an empty manifest almost always means the crate declaring the jobs was not linked in.

mod client_types;
mod docs;
mod json_schema;
mod manifest_json;
pub mod mcp_tools;
mod text;

pub use client_types::client_types;
pub use docs::docs;
pub use json_schema::{input_id, json_schema, schema_bundle};
pub use manifest_json::{check, manifest_json, CheckResult};
pub use mcp_tools::{mcp_tools, tool_list};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::error::{ErrorCode, JobError};
use crate::Manifest;

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

/// What the manifest command does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestAction {
    /// Print the manifest JSON.
    Print,
    /// Print one output, by its file name (`jobs.ts`, ...).
    PrintOutput(String),
    /// Write every output into the directory (created if missing).
    Write(PathBuf),
    /// Check committed copies: every output in a directory, or one file (its name picks the
    /// output; any other name is the manifest).
    Check(PathBuf),
}

/// Exit code: done (or every committed copy is fresh).
pub const EXIT_OK: u8 = 0;
/// Exit code: refused, stale or unwritable (the reason is printed).
pub const EXIT_FAILED: u8 = 1;
/// Exit code: the command line was wrong.
pub const EXIT_USAGE: u8 = 2;

/// Refuses a manifest that declares nothing, unless `allow_empty`: a binary whose manifest is
/// empty almost always forgot to link the crate that declares the jobs, and `--out`/`--check`
/// would then commit and verify an empty file.
pub fn ensure_not_empty(manifest: &Manifest, allow_empty: bool) -> Result<(), JobError> {
    if allow_empty || !manifest.is_empty() {
        return Ok(());
    }
    Err(JobError::new(
        ErrorCode::RegistrarMissing,
        "this binary links no #[job] or #[task]: its manifest would be empty",
    )
    .with_fix(
        "link the crate that declares your jobs into this binary: in src/bin/jobs.rs write \
         `use my_app as _;` (your library crate's name), or declare the jobs in this binary; \
         pass --allow-empty if an empty manifest is what you want",
    ))
}

/// Runs `action` over `manifest`, writing answers to `out` and problems to `err`; answers the
/// exit code. `command` is how a user runs this tool (for the regenerate hint), e.g.
/// `cargo run --bin jobs -- manifest`.
pub fn manifest_command(
    manifest: &Manifest,
    action: &ManifestAction,
    allow_empty: bool,
    command: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    if let Err(error) = ensure_not_empty(manifest, allow_empty) {
        let code = error.code().map_or("X_ERROR", ErrorCode::as_str);
        let _ = writeln!(err, "error: {code}: {}", error.message());
        if let Some(fix) = error.fix() {
            let _ = writeln!(err, "  fix: {fix}");
        }
        return EXIT_FAILED;
    }
    match action {
        ManifestAction::Print => {
            let _ = out.write_all(manifest_json(manifest).as_bytes());
            EXIT_OK
        }
        ManifestAction::PrintOutput(file) => match OUTPUTS.iter().find(|o| o.file == file) {
            Some(output) => {
                let _ = out.write_all((output.render)(manifest).as_bytes());
                EXIT_OK
            }
            None => {
                let names: Vec<&str> = OUTPUTS.iter().map(|o| o.file).collect();
                let _ = writeln!(
                    err,
                    "error: no output named {file}; the outputs are {}",
                    names.join(", ")
                );
                EXIT_USAGE
            }
        },
        ManifestAction::Write(dir) => match write_all(dir, manifest) {
            Ok(()) => {
                for output in OUTPUTS {
                    let _ = writeln!(err, "wrote {}", dir.join(output.file).display());
                }
                EXIT_OK
            }
            Err(why) => {
                let _ = writeln!(err, "error: cannot write into {}: {why}", dir.display());
                EXIT_FAILED
            }
        },
        ManifestAction::Check(target) => {
            let shown = target.display().to_string();
            let (results, regenerate) = if target.is_dir() {
                (
                    check_all(target, manifest)
                        .into_iter()
                        .map(|(file, result)| (target.join(file).display().to_string(), result))
                        .collect::<Vec<_>>(),
                    format!("{command} --out {shown}"),
                )
            } else {
                let output = output_for(target);
                let expected = (output.render)(manifest);
                (
                    vec![(shown.clone(), check(target, &expected))],
                    format!("{command} --print {} > {shown}", output.file),
                )
            };
            let mut fresh = true;
            for (file, result) in results {
                match result {
                    CheckResult::Fresh => {}
                    CheckResult::Stale { first_difference } => {
                        fresh = false;
                        let _ = writeln!(
                            err,
                            "error: {file} is stale (first difference at line {first_difference}); \
                             regenerate it with `{regenerate}` and commit it"
                        );
                    }
                    CheckResult::Unreadable(why) => {
                        fresh = false;
                        let _ = writeln!(
                            err,
                            "error: cannot read {file}: {why}; generate it with `{regenerate}`"
                        );
                    }
                }
            }
            if fresh {
                EXIT_OK
            } else {
                EXIT_FAILED
            }
        }
    }
}

const USAGE: &str = "usage: manifest [--allow-empty] [--out DIR | --check DIR | --check FILE | --print FILE]\n  \
    (no flag)       print the manifest JSON\n  \
    --out DIR       write manifest.json, schemas.json, mcp-tools.json, jobs.ts and JOBS.md into DIR\n  \
    --check DIR     exit 1 when any of them in DIR is not what the code declares now\n  \
    --check FILE    the same for one file (its name picks the output; any other name is the manifest)\n  \
    --print FILE    print one output (manifest.json, schemas.json, mcp-tools.json, jobs.ts, JOBS.md)\n  \
    --allow-empty   accept a manifest with no jobs (refused otherwise: the jobs' crate is not linked)";

/// A `manifest` binary of its own: prints the manifest of the jobs linked into it; `--out DIR`
/// writes every output; `--check DIR` or `--check FILE` exits 1 when a committed copy is not
/// byte-for-byte what the code declares now; 2 on a usage or registry error. The `jobs`
/// operator binary's `manifest` verb ([`crate::cli`]) is the same command.
pub fn manifest_main(args: impl IntoIterator<Item = String>) -> ExitCode {
    let args: Vec<String> = args.into_iter().collect();
    let manifest = match crate::manifest() {
        Ok(manifest) => manifest,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    run(&manifest, &args)
}

/// [`manifest_main`] over a given manifest.
pub fn run(manifest: &Manifest, args: &[String]) -> ExitCode {
    let (allow_empty, args): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|a| *a == "--allow-empty");
    let action = match args.as_slice() {
        [] => ManifestAction::Print,
        [flag, dir] if *flag == "--out" => ManifestAction::Write(PathBuf::from(dir)),
        [flag, file] if *flag == "--print" => ManifestAction::PrintOutput((*file).clone()),
        [flag, path] if *flag == "--check" => ManifestAction::Check(PathBuf::from(path)),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    ExitCode::from(manifest_command(
        manifest,
        &action,
        !allow_empty.is_empty(),
        "cargo run --bin manifest --",
        &mut out,
        &mut err,
    ))
}
