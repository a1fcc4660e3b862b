//! The `jobs` command-line tool: an on-call engineer's view of a Postgres queue, without SQL,
//! and the manifest and MCP server of the jobs linked into the binary.
//!
//! An app gives itself the tool with one file, `src/bin/jobs.rs`, so that every verb sees the
//! app's own `#[job]`s and `#[task]`s (`jobs manifest`, `jobs mcp`, `jobs tasks`, `jobs
//! backfills --pending`):
//!
//! ```no_run
//! use my_app as _; // the library crate that declares the jobs: links them into this binary
//! # mod my_app {}
//!
//! fn main() -> std::process::ExitCode {
//!     jobs::cli::main()
//! }
//! ```
//!
//! `cargo run --bin jobs -- manifest --out generated`, `cargo run --bin jobs -- ls`. The queue
//! verbs read `DATABASE_URL` (or `--database-url`: `postgres://...`, or `sqlite://jobs.db` for
//! the SQLite store) and `JOBS_SCHEMA` (or `--schema`, default `public`, Postgres only); `manifest` needs no database. Every queue verb takes `--json`; otherwise it prints
//! readable tables. A verb that changes a job or a queue records who did it (the job's history,
//! shown by `jobs show`; a queue's pause) under `--actor` (or `JOBS_ACTOR`), by default
//! `cli:$USER`. `jobs outbox` reads the transactional outbox beside the jobs, or in the app's
//! database at `--outbox-url` (or `JOBS_OUTBOX_URL`; `--outbox-schema` on Postgres). `jobs
//! errors explain <CODE>`, `jobs tasks show <task>` and `jobs test <job> --input <json>` need
//! no database. Exit codes: `0` done, `1` refused (the `X_...` code is printed), `2` usage (a
//! command line the parser refuses is `X_CLI_BAD_FLAG` too, with the fix).

mod args;
mod connect;
mod outbox_store;
mod output;
mod render;
mod verbs;

use std::ffi::OsString;
use std::io::Write;

use clap::Parser;
use serde_json::json;

use crate::error::{ErrorCode, JobError};

use args::{Cli, ErrorsVerb, LsArgs, QueueVerb, TasksVerb, Verb};
use connect::{actor, connect};
use output::emit;

/// Exit code: the verb did what it was asked.
pub const EXIT_OK: u8 = 0;
/// Exit code: the queue refused (the `X_...` code is printed).
pub const EXIT_REFUSED: u8 = 1;
/// Exit code: the command line was wrong.
pub const EXIT_USAGE: u8 = 2;

/// The tool as a binary's `main`: [`run`] over the process's arguments on a runtime of its own.
pub fn main() -> std::process::ExitCode {
    crate::mcp::exit_on_own_runtime(async {
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        run(std::env::args_os(), &mut out, &mut err).await
    })
}

/// Runs the tool over `args` (the program name first), writing the answer to `out` and
/// problems to `err`; answers the exit code.
pub async fn run<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let mut cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // `--json` is honoured even on a command line that does not parse.
            let json = args.iter().any(|a| a == "--json");
            return finish(Err(usage_error(&e)), json, out, err);
        }
        Err(e) => {
            // `--help` and `--version`: the answer, not a refusal.
            let _ = write!(out, "{e}");
            return EXIT_OK;
        }
    };
    let json = cli.json;
    let verb = match cli.verb.take() {
        Some(Verb::Manifest(args)) => return verbs::manifest::manifest(args, out, err),
        Some(Verb::Dashboard(args)) => {
            return finish(
                verbs::dashboard::dashboard(&cli, args, out).await,
                json,
                out,
                err,
            )
        }
        Some(Verb::Errors(verb)) => {
            let text = match verb {
                ErrorsVerb::Explain { code } => verbs::errors::explain(&code, json),
                ErrorsVerb::List => Ok(verbs::errors::list(json)),
            };
            return finish(text.and_then(|t| emit(out, &t)), json, out, err);
        }
        Some(Verb::Test(args)) => {
            let tested = match verbs::test::test(&args.job, &args.input, json).await {
                Ok(tested) => tested,
                Err(error) => return finish(Err(error), json, out, err),
            };
            if let Err(error) = emit(out, &tested.trace) {
                return finish(Err(error), json, out, err);
            }
            // Under --json the trace carries the ending's code: one document on stdout.
            return match tested.failed {
                None => EXIT_OK,
                Some(_) if json => EXIT_REFUSED,
                Some(error) => finish(Err(error), false, out, err),
            };
        }
        Some(Verb::Mcp(args)) => return crate::mcp::serve_linked(args.allow_enqueue).await,
        Some(Verb::Outbox) => {
            let result = verbs::outbox::outbox(&cli)
                .await
                .and_then(|text| emit(out, &text));
            return finish(result, json, out, err);
        }
        // One declared task's schedule: no database.
        Some(Verb::Queue(QueueVerb::Tasks {
            verb: Some(TasksVerb::Show { name, count }),
        })) => {
            use crate::clock::Clock;
            let now = crate::clock::SystemClock.now();
            let text = verbs::tasks::show(&name, count, now, json);
            return finish(text.and_then(|t| emit(out, &t)), json, out, err);
        }
        Some(Verb::Queue(QueueVerb::Verify { manifest })) => {
            let report = match connect(&cli).await {
                Ok(jobs) => verbs::verify::verify(&jobs, manifest.as_deref(), json).await,
                Err(error) => Err(error),
            };
            let (text, failed) = match report.map_err(tool_fix) {
                Ok(report) => report,
                Err(error) => return finish(Err(error), json, out, err),
            };
            if let Err(error) = emit(out, &text) {
                return finish(Err(error), json, out, err);
            }
            // Under --json the report carries every failure: one document on stdout.
            return match failed {
                None => EXIT_OK,
                Some(_) if json => EXIT_REFUSED,
                Some(error) => finish(Err(error), false, out, err),
            };
        }
        Some(Verb::Queue(verb)) => verb,
        None => QueueVerb::Ls(LsArgs::default()),
    };
    finish(
        execute(cli, verb, out).await.map_err(tool_fix),
        json,
        out,
        err,
    )
}

/// A command line the parser refuses, as the tool's refusal: `X_CLI_BAD_FLAG`, the parser's
/// first line as the message, and as the fix its tip (a near flag or value), the usage of the
/// verb, and where the help is.
fn usage_error(e: &clap::Error) -> JobError {
    let text = e.render().to_string();
    let message = text
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .trim()
        .to_string();
    let mut fix: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("tip: "))
        .map(str::to_string)
        .collect();
    if let Some(usage) = text.lines().find_map(|l| l.strip_prefix("Usage: ")) {
        fix.push(format!("usage: {}", usage.trim()));
    }
    fix.push("`jobs --help` lists the verbs, `jobs <verb> --help` a verb's flags".into());
    JobError::new(ErrorCode::CliBadFlag, message).with_fix(fix.join("; "))
}

/// A queue verb's error, its fix naming the tool's verb where the driver's names its own API.
fn tool_fix(error: JobError) -> JobError {
    if error.is(ErrorCode::DriverSchemaMissing) {
        return error.with_fix(
            "run `jobs migrate` with the same --database-url (and --schema) to apply the migrations, or pass --schema naming the schema they were applied to",
        );
    }
    error
}

/// The exit code of a verb's result, its refusal printed (as JSON with `--json`).
fn finish(
    result: Result<(), JobError>,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    match result {
        Ok(()) => EXIT_OK,
        Err(error) => {
            let code = error.code().map_or("X_ERROR", ErrorCode::as_str);
            let exit = if error.is(ErrorCode::CliBadFlag) {
                EXIT_USAGE
            } else {
                EXIT_REFUSED
            };
            if json {
                let body = json!({ "error": {
                    "code": code, "message": error.message(), "fix": error.fix(),
                }});
                let _ = writeln!(out, "{body:#}");
            } else {
                let _ = writeln!(err, "error: {code}: {}", error.message());
                if let Some(fix) = error.fix() {
                    let _ = writeln!(err, "  fix: {fix}");
                }
            }
            exit
        }
    }
}

/// Runs one queue verb on the queue the flags name, and prints its answer.
async fn execute(cli: Cli, verb: QueueVerb, out: &mut dyn Write) -> Result<(), JobError> {
    let jobs = connect(&cli).await?.acting_as(actor(&cli));
    let json = cli.json;
    let text = match verb {
        QueueVerb::Ls(args) => verbs::list::ls(&jobs, args, json).await?,
        QueueVerb::Show { id } => verbs::show::show(&jobs, id, json).await?,
        QueueVerb::Batch { id } => verbs::show::batch(&jobs, id, json).await?,
        QueueVerb::Retry { id, from_step } => {
            verbs::mutate::retry(&jobs, id, from_step, json).await?
        }
        QueueVerb::Cancel { id, reason } => {
            verbs::mutate::cancel(&jobs, id, reason.as_deref(), json).await?
        }
        QueueVerb::Rm { id } => verbs::mutate::remove(&jobs, id, json).await?,
        QueueVerb::Promote { id } => verbs::mutate::promote(&jobs, id, json).await?,
        QueueVerb::Drain { queue } => verbs::mutate::drain(&jobs, queue, json).await?,
        QueueVerb::Pause { queue } => verbs::mutate::pause(&jobs, queue, json).await?,
        QueueVerb::Resume { queue } => verbs::mutate::resume(&jobs, queue, json).await?,
        QueueVerb::Workers => verbs::list::workers(&jobs, json).await?,
        QueueVerb::Tasks { .. } => verbs::tasks::tasks(&jobs, json).await?,
        QueueVerb::Backfills(args) => verbs::backfill::backfills(&jobs, args, json).await?,
        QueueVerb::Backfill(args) => verbs::backfill::backfill(&jobs, args, json).await?,
        QueueVerb::Posting(args) => verbs::posting::posting(&jobs, args, json).await?,
        QueueVerb::Stats => verbs::stats::stats(&jobs, json).await?,
        QueueVerb::Verify { .. } => unreachable!("answered before the dispatch"),
        QueueVerb::Migrate => {
            verbs::migrate::migrate(&jobs, cli.schema.as_deref().unwrap_or("public"), json).await?
        }
    };
    emit(out, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn tool(args: &[&str]) -> (u8, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut line = vec!["jobs"];
        line.extend_from_slice(args);
        let code = run(line, &mut out, &mut err).await;
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    /// A command line the parser refuses is the tool's refusal, code and fix, never the
    /// parser's bare text; `--json` answers it as JSON.
    #[tokio::test]
    async fn a_usage_error_is_x_cli_bad_flag_with_its_fix() {
        let (code, _, err) = tool(&["ls", "--queu", "mail"]).await;
        assert_eq!(code, EXIT_USAGE);
        assert!(
            err.starts_with("error: X_CLI_BAD_FLAG: unexpected argument '--queu' found"),
            "{err}"
        );
        assert!(err.contains("  fix: ") && err.contains("--queue"), "{err}");
        assert!(err.contains("usage: jobs ls"), "{err}");
        let (code, _, err) = tool(&["frobnicate"]).await;
        assert_eq!(code, EXIT_USAGE);
        assert!(err.starts_with("error: X_CLI_BAD_FLAG: "), "{err}");
        let (code, out, _) = tool(&["show", "not-a-uuid", "--json"]).await;
        assert_eq!(code, EXIT_USAGE);
        let body: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(body["error"]["code"], "X_CLI_BAD_FLAG");
        assert!(body["error"]["fix"]
            .as_str()
            .unwrap()
            .contains("jobs --help"));
        // Help is an answer.
        let (code, out, _) = tool(&["--help"]).await;
        assert_eq!(code, EXIT_OK);
        assert!(out.contains("errors"), "{out}");
    }

    #[tokio::test]
    async fn errors_explain_needs_no_database() {
        let (code, out, err) = tool(&[
            "--database-url",
            "",
            "errors",
            "explain",
            "X_JOB_MAX_ATTEMPTS",
        ])
        .await;
        assert_eq!(code, EXIT_OK, "{err}");
        assert!(
            out.starts_with("X_JOB_MAX_ATTEMPTS\n  meaning: Retries exhausted"),
            "{out}"
        );
        assert!(out.contains("fix:     inspect `last_error`"), "{out}");
        let (code, _, err) = tool(&["errors", "explain", "X_NOPE_NOPE"]).await;
        assert_eq!(code, EXIT_USAGE);
        assert!(err.starts_with("error: X_CLI_BAD_FLAG: "), "{err}");
        let (code, out, _) = tool(&["errors", "list"]).await;
        assert_eq!(code, EXIT_OK);
        assert_eq!(out.lines().count(), ErrorCode::ALL.len());
    }
}
