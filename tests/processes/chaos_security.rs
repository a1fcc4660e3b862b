//! Security basics, with tests:
//!
//! 1. Every statement binds its values: the only text spliced into SQL is the validated schema
//!    name and fixed column lists (a scan of the `.sql` files and of the Rust sources), and
//!    hostile values round-trip as data.
//! 2. No payload, idempotency key or secret reaches a log line or an error: jobs run on Postgres
//!    with a secret-looking payload and key through success, retry, dead letter, a payload that
//!    no longer parses, a refused enqueue and a duplicate, while a subscriber captures every
//!    event and span field; the secret appears in none, nor in any error or `last_error`.
//!
//! Tenant filters through the operator API: that API was still being written when this suite
//! was; see the report of issue 9.

use crate::support;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use jobs::clock::TestClock;
use jobs::driver::{PostgresDriver, StepListParams};
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};
use support::pg;

// ---------------------------------------------------------------------------------------------
// 1. Bound parameters.

fn runtime_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs-runtime/src")
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// The text of a call's argument list starting at `open` (the index of its `(`).
fn call_args(text: &str, open: usize) -> &str {
    let mut depth = 0;
    let mut in_str = false;
    let bytes = text.as_bytes();
    let mut i = open;
    while i < bytes.len() {
        let c = bytes[i];
        if in_str {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
        } else if c == b'(' {
            depth += 1;
        } else if c == b')' {
            depth -= 1;
            if depth == 0 {
                return &text[open + 1..i];
            }
        }
        i += 1;
    }
    &text[open + 1..]
}

/// Source without its `#[cfg(test)]` module (test code builds SQL for its own fixtures).
fn non_test(text: &str) -> &str {
    text.find("\n#[cfg(test)]\nmod ")
        .map_or(text, |at| &text[..at])
}

#[test]
fn the_sql_files_splice_only_the_schema_and_fixed_column_lists() {
    // The schema, fixed column lists, and the fixed text of the sql/fragment_<name>.sql files
    // (themselves among the files checked here), each spliced by its name.
    const COLUMNS: &[&str] = &["schema", "job_columns", "j_job_columns", "summary_columns"];
    let mut sql = Vec::new();
    files(&runtime_src().join("driver/postgres/sql"), "sql", &mut sql);
    let fragments: Vec<String> = sql
        .iter()
        .filter_map(|path| path.file_stem()?.to_str()?.strip_prefix("fragment_"))
        .map(str::to_string)
        .collect();
    assert!(fragments.len() >= 3, "found the fragments: {fragments:?}");
    let allowed = |name: &str| COLUMNS.contains(&name) || fragments.iter().any(|f| f == name);
    files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations"),
        "sql",
        &mut sql,
    );
    assert!(sql.len() >= 20, "found the statements: {sql:?}");
    let mut problems = String::new();
    for path in &sql {
        let text = std::fs::read_to_string(path).expect("read");
        let code: String = text
            .lines()
            .map(|l| l.split("--").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        // Braces inside quoted literals (a regex's `{3}`) are the statement's own text.
        let code: String = code.split('\'').step_by(2).collect::<Vec<_>>().join("''");
        let mut rest = code.as_str();
        while let Some(at) = rest.find('{') {
            let end = rest[at..].find('}').map_or(rest.len(), |e| at + e);
            let name = &rest[at + 1..end];
            if !allowed(name) {
                let _ = writeln!(problems, "{}: splices `{{{name}}}`", path.display());
            }
            rest = &rest[end.min(rest.len() - 1) + 1..];
        }
        // Dynamic SQL inside the database (plpgsql `execute '...' || value`) is a splice too.
        let lower = code.to_lowercase();
        for (i, _) in lower.match_indices("execute ") {
            let next = lower[i + 8..].trim_start();
            if !(next.starts_with("function") || next.starts_with("procedure")) {
                let _ = writeln!(problems, "{}: dynamic `execute`", path.display());
            }
        }
    }
    assert!(problems.is_empty(), "{problems}");
}

#[test]
fn rust_sources_hand_sqlx_only_rendered_statements_never_formatted_text() {
    let mut sources = Vec::new();
    files(&runtime_src(), "rs", &mut sources);
    let mut problems = String::new();
    let mut statements = 0;
    for path in &sources {
        let full = std::fs::read_to_string(path).expect("read");
        let text = non_test(&full);
        let name = path.display();
        // The one door: `sql::safe`, the only `AssertSqlSafe` outside tests.
        if text.contains("AssertSqlSafe(") && !path.ends_with("driver/postgres/sql.rs") {
            let _ = writeln!(problems, "{name}: AssertSqlSafe outside sql::safe");
        }
        for (at, _) in text.match_indices("safe(") {
            let before = &text[..at];
            if before.ends_with("AssertSql") || before.ends_with("fn ") || before.ends_with('_') {
                continue;
            }
            statements += 1;
            let args: String = call_args(text, at + 4)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let rendered = args.starts_with("render(");
            let literal = args.starts_with('"') && args.ends_with("\".to_string()");
            let bound_render =
                !args.contains('(') && (text.contains(&format!("let {args} = render(")));
            if args.contains("format!") || !(rendered || literal || bound_render) {
                let _ = writeln!(problems, "{name}: safe({args}) is not a rendered statement");
            }
            if rendered {
                // render(template, schema) then only `.replace("{x}", CONST)`s.
                let render_args = call_args(&args, "render".len());
                if !render_args.contains("schema") {
                    let _ = writeln!(problems, "{name}: render({render_args}) without the schema");
                }
                let tail = &args["render(".len() + render_args.len() + 1..];
                for replace in tail.split(".replace(").skip(1) {
                    let value = replace.split(',').nth(1).unwrap_or("").trim();
                    let value = value.trim_end_matches(')').trim();
                    let constant = value.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                        || value.starts_with('"');
                    if !constant {
                        let _ = writeln!(problems, "{name}: splices `{value}` into a statement");
                    }
                }
            }
        }
        // No sqlx call takes a string built at run time.
        for call in ["query(", "query_scalar(", "query_as(", "raw_sql("] {
            for (at, _) in text.match_indices(call) {
                if text[..at].ends_with("sqlx::") {
                    let args = call_args(text, at + call.len() - 1);
                    if args.contains("format!") || args.contains("&format") {
                        let _ = writeln!(problems, "{name}: sqlx::{call}{args}) formats its SQL");
                    }
                }
            }
        }
    }
    assert!(statements > 5, "found the statements ({statements})");
    assert!(problems.is_empty(), "{problems}");
}

#[tokio::test]
async fn a_schema_name_that_is_not_a_plain_identifier_is_refused_and_hostile_values_stay_data() {
    let (pool, schema) = pg::schema("security_bind").await;
    for bad in ["public; drop table x", "a\"b", "Jobs", "x y", "--", ""] {
        let error = PostgresDriver::new(pool.clone(), bad).unwrap_err();
        assert_eq!(error.code(), Some(ErrorCode::DriverUrlInvalid), "{bad:?}");
    }
    let jobs = Jobs::new(PostgresDriver::new(pool.clone(), &schema).unwrap());
    let hostile = "x'); drop table x_jobs; --";
    let queued = Account::enqueue(
        &jobs,
        Secretive {
            token: hostile.into(),
            n: 9,
        },
    )
    .await
    .unwrap();
    let row = jobs.job(queued.id).await.unwrap().unwrap();
    assert_eq!(row.idempotency_key, format!("acct:{hostile}"));
    assert_eq!(row.input["token"], hostile);
    let again = Account::enqueue(
        &jobs,
        Secretive {
            token: hostile.into(),
            n: 9,
        },
    )
    .await
    .unwrap();
    assert!(again.deduped, "the key is matched as data");
}

// ---------------------------------------------------------------------------------------------
// 2. No secret in a log line or an error.

const SECRET: &str = "sk_live_9f8e7d6c5b4a";

#[derive(Serialize, Deserialize, JsonSchema)]
struct Secretive {
    token: String,
    n: u64,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct StrictInput {
    token: String,
    n: u64,
}

/// n = 0 completes through a step; n = 1 fails twice and is dead-lettered.
#[job(
    key = "acct:{token}",
    tenant = none,
    retry(attempts = 2, backoff = fixed, delay = "1s", jitter = none)
)]
async fn account(run: Run, input: Secretive) -> Result<u64, JobError> {
    let n = input.n;
    run.step("charge", async move {
        if n == 1 {
            Err(JobError::retryable("the provider declined"))
        } else {
            Ok(n)
        }
    })
    .await
}

#[job(key = "strict:{n}", tenant = none)]
async fn strict(_run: Run, input: StrictInput) -> Result<u64, JobError> {
    Ok(input.n)
}

/// Every field of every event and span, as text.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut line = format!("span {}:", span.metadata().target());
        span.record(&mut Fields(&mut line));
        self.0.lock().unwrap().push(line);
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut line = String::from("record:");
        values.record(&mut Fields(&mut line));
        self.0.lock().unwrap().push(line);
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut line = format!(
            "{} {}:",
            event.metadata().level(),
            event.metadata().target()
        );
        event.record(&mut Fields(&mut line));
        self.0.lock().unwrap().push(line);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn no_payload_key_or_secret_reaches_a_log_line_or_an_error() {
    // The capture is this thread's default subscriber, not the process's: the other tests of
    // this binary run beside it. The test's runtime is current-thread, so the worker's pass and
    // every task it spawns run on this thread, under the capture.
    let logs = Capture::default();
    let _capturing = tracing::subscriber::set_default(logs.clone());
    let (pool, schema) = pg::schema("security_logs").await;
    let clock = TestClock::new();
    let driver = PostgresDriver::new(pool.clone(), &schema).unwrap();
    let jobs = Jobs::with_clock(Arc::new(driver), Arc::new(clock.clone()));
    let worker = jobs.worker().build().unwrap();
    let mut errors: Vec<String> = Vec::new();

    let ok = Account::enqueue(
        &jobs,
        Secretive {
            token: SECRET.into(),
            n: 0,
        },
    )
    .await
    .unwrap();
    let failing = Account::enqueue(
        &jobs,
        Secretive {
            token: format!("{SECRET}-2"),
            n: 1,
        },
    )
    .await
    .unwrap();
    // A payload that no longer parses, holding the secret where a number belongs.
    let broken = Strict::enqueue(
        &jobs,
        StrictInput {
            token: "t".into(),
            n: 1,
        },
    )
    .await
    .unwrap();
    sqlx::query(AssertSqlSafe(format!(
        "update {schema}.x_jobs set input = jsonb_build_object('token', 't', 'n', $2::text) where id = $1"
    )))
    .bind(broken.id)
    .bind(SECRET)
    .execute(&pool)
    .await
    .unwrap();
    // A duplicate refused under `error_on_duplicate`, and an input jsonb refuses.
    for refused in [
        Account::enqueue_with(
            &jobs,
            Secretive {
                token: SECRET.into(),
                n: 0,
            },
            EnqueueOptions::new().error_on_duplicate(),
        )
        .await,
        Account::enqueue(
            &jobs,
            Secretive {
                token: format!("{SECRET}\u{0}"),
                n: 0,
            },
        )
        .await,
        Account::enqueue_with(
            &jobs,
            Secretive {
                token: SECRET.into(),
                n: 5,
            },
            EnqueueOptions::new().run_id(SECRET),
        )
        .await,
    ] {
        let error = refused.unwrap_err();
        errors.push(format!("{error} {error:?}"));
    }

    for _ in 0..3 {
        for execution in worker.tick().await.unwrap() {
            errors.push(format!("{execution:?}"));
        }
        clock.advance(std::time::Duration::from_secs(2));
    }
    for id in [ok.id, failing.id, broken.id] {
        let row = jobs.job(id).await.unwrap().unwrap();
        assert!(!row.state.is_live(), "{id} settled: {}", row.state);
        errors.push(format!("{:?} {:?}", row.last_error, row.last_error_code));
    }
    let failed_steps = jobs
        .driver()
        .step_list(&StepListParams {
            run_id: failing.run_id,
        })
        .await
        .unwrap();
    errors.push(format!(
        "{:?}",
        failed_steps.iter().map(|s| &s.error).collect::<Vec<_>>()
    ));

    let lines = logs.0.lock().unwrap().clone();
    assert!(
        lines.iter().any(|l| l.contains("jobs.attempt.failed")),
        "the capture saw the runtime's logs: {lines:#?}"
    );
    let leaks: Vec<&String> = lines
        .iter()
        .chain(errors.iter())
        .filter(|l| l.contains(SECRET))
        .collect();
    println!(
        "security: {} log lines and {} errors captured, {} leaks",
        lines.len(),
        errors.len(),
        leaks.len()
    );
    assert!(leaks.is_empty(), "the secret leaked: {leaks:#?}");
}
