//! `jobs verify [--manifest PATH]`: the checks to run before a deploy, each answered ok, failed
//! (with its code and fix) or skipped: step names, the committed manifest's freshness, the
//! migrations applied to the store, and the store's persistence settings. Reads only.

use std::path::Path;

use serde::Serialize;

use crate::client::Jobs;
use crate::error::{ErrorCode, JobError};

use crate::cli::output::to_json;
use crate::cli::render::table;

/// One check's answer.
#[derive(Debug, Clone, Serialize)]
struct Check {
    check: &'static str,
    /// `ok`, `failed` or `skipped`.
    status: &'static str,
    detail: String,
    /// The code of a failed check.
    code: Option<&'static str>,
    fix: Option<String>,
}

impl Check {
    fn ok(check: &'static str, detail: impl Into<String>) -> Self {
        Check {
            check,
            status: "ok",
            detail: detail.into(),
            code: None,
            fix: None,
        }
    }

    fn skipped(check: &'static str, detail: impl Into<String>) -> Self {
        Check {
            status: "skipped",
            ..Check::ok(check, detail)
        }
    }

    fn failed(check: &'static str, error: &JobError) -> Self {
        Check {
            check,
            status: "failed",
            detail: error.message().to_string(),
            code: error.code().map(ErrorCode::as_str),
            fix: error.fix().map(str::to_string),
        }
    }
}

/// Runs every check; answers the report and, when a check failed, the first failure.
pub(in crate::cli) async fn verify(
    jobs: &Jobs,
    manifest: Option<&Path>,
    json: bool,
) -> Result<(String, Option<JobError>), JobError> {
    let mut checks = vec![Check::ok(
        "step names",
        "decided where decidable: #[job] refuses two literal step names in one body at compile time (X_STEP_DUPLICATE); a name computed at run time is refused when a run writes it twice",
    )];
    let mut failures = Vec::new();
    let mut fail = |checks: &mut Vec<Check>, name, error: JobError| {
        checks.push(Check::failed(name, &error));
        failures.push(error);
    };
    match manifest {
        None => checks.push(Check::skipped(
            "manifest",
            "pass --manifest PATH (a committed manifest.json, or a directory of generated outputs)",
        )),
        Some(path) => match stale_outputs(path) {
            Ok(fresh) => checks.push(Check::ok("manifest", fresh)),
            Err(error) => fail(&mut checks, "manifest", error),
        },
    }
    let store = jobs.driver().store_check().await?;
    if store.pending_migrations.is_empty() {
        checks.push(Check::ok(
            "migrations",
            "every embedded migration is applied",
        ));
    } else {
        let list: Vec<String> = store
            .pending_migrations
            .iter()
            .map(|v| format!("{v:04}"))
            .collect();
        let error = JobError::new(
            ErrorCode::DriverSchemaMissing,
            format!("migrations not applied: {}", list.join(", ")),
        )
        .with_fix("run `jobs migrate` with the same --database-url (and --schema)");
        fail(&mut checks, "migrations", error);
    }
    let settings: Vec<String> = store
        .settings
        .iter()
        .map(|(name, value)| format!("{name} = {value}"))
        .collect();
    match &store.weakness {
        None => checks.push(Check::ok("persistence", settings.join(", "))),
        Some(weakness) => {
            let error = JobError::new(
                ErrorCode::DriverDurabilityInsufficient,
                format!("{weakness} ({})", settings.join(", ")),
            )
            .with_fix(durability_fix(jobs.driver().name()));
            fail(&mut checks, "persistence", error);
        }
    }
    let text = if json {
        to_json(&serde_json::json!({ "ok": failures.is_empty(), "checks": checks }))
    } else {
        let rows: Vec<Vec<String>> = checks
            .iter()
            .map(|c| {
                let detail = match (&c.code, &c.fix) {
                    (Some(code), Some(fix)) => format!("{code}: {} (fix: {fix})", c.detail),
                    _ => c.detail.clone(),
                };
                vec![c.check.to_string(), c.status.to_string(), detail]
            })
            .collect();
        table(&["CHECK", "STATUS", "DETAIL"], &rows)
    };
    let failed = failures.into_iter().next().map(|first| {
        let count = checks.iter().filter(|c| c.status == "failed").count();
        JobError::new(
            first.code().unwrap_or(ErrorCode::Invariant),
            format!("{count} check(s) failed; the first: {}", first.message()),
        )
        .with_fix(first.fix().unwrap_or("see the report above").to_string())
    });
    Ok((text, failed))
}

/// Checks committed generated outputs against this binary's manifest: a directory of every
/// output, or one file (`manifest.json`).
fn stale_outputs(path: &Path) -> Result<String, JobError> {
    use crate::codegen::{check, check_all, manifest_json, CheckResult};
    let manifest = crate::manifest()?;
    let results = if path.is_dir() {
        check_all(path, &manifest)
    } else {
        vec![("manifest.json", check(path, &manifest_json(&manifest)))]
    };
    let bad: Vec<String> = results
        .iter()
        .filter_map(|(file, result)| match result {
            CheckResult::Fresh => None,
            CheckResult::Stale { first_difference } => Some(format!(
                "{file} is stale (first difference at line {first_difference})"
            )),
            CheckResult::Unreadable(_) => Some(format!("{file} cannot be read")),
        })
        .collect();
    if bad.is_empty() {
        return Ok(format!(
            "{} committed output(s) match the jobs linked into this binary",
            results.len()
        ));
    }
    Err(
        JobError::new(ErrorCode::Invariant, bad.join("; ")).with_fix(if path.is_dir() {
            "regenerate: `jobs manifest --out <dir>`, then commit"
        } else {
            "regenerate: `jobs manifest > <file>`, then commit"
        }),
    )
}

fn durability_fix(driver: &str) -> &'static str {
    match driver {
        "postgres" => "turn fsync and synchronous_commit back on in postgresql.conf",
        "sqlite" => "open the store with synchronous at normal (WAL) or full",
        "redis" => {
            "`CONFIG SET appendonly yes` and `CONFIG SET appendfsync always` (and in redis.conf)"
        }
        _ => "run on a durable store (Postgres, SQLite or Redis with an fsynced append-only file)",
    }
}
