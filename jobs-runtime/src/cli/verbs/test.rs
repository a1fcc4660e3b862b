//! `jobs test <job> --input <json>`: runs one job linked into this binary against a throwaway
//! store (the memory driver) and a frozen clock ([`TestKit`]), moving the clock to each due
//! time (backoffs, sleeps, event-wait polls and timeouts) until nothing is live, and prints the
//! trace: every attempt with its outcome and code, the steps of the run, the jobs it enqueued
//! and how each ended. Nothing reaches a real store; no input, step output or result is
//! printed. It needs no database.

use serde_json::{json, Value};

use crate::driver::introspect::JobListParams;
use crate::driver::JobState;
use crate::enqueue::EnqueueOptions;
use crate::error::{ErrorCode, JobError};
use crate::execution::ExecutionOutcome;
use crate::registry::Registry;
use crate::testing::TestKit;

use crate::cli::output::to_json;
use crate::cli::render::table;

/// What the test run came to: its trace, and the refusal when the job did not complete.
pub(in crate::cli) struct Tested {
    pub(in crate::cli) trace: String,
    pub(in crate::cli) failed: Option<JobError>,
}

fn outcome(o: ExecutionOutcome) -> &'static str {
    use ExecutionOutcome::*;
    match o {
        Completed => "completed",
        Suspended => "suspended",
        Retried => "retried",
        DeadLettered => "dead-lettered",
        Dropped => "dropped",
        Interrupted => "interrupted",
        LeaseLost => "lease-lost",
        Deferred => "deferred",
        Shed => "shed",
        Refused => "refused",
        Expired => "expired",
    }
}

/// Runs job `name` once on a throwaway store; `input` is the job's input as JSON text.
pub(in crate::cli) async fn test(name: &str, input: &str, json: bool) -> Result<Tested, JobError> {
    let registry = Registry::global()?;
    let Some(entry) = registry.get(name) else {
        let mut known: Vec<&str> = registry.entries().map(|j| j.descriptor().name).collect();
        known.sort_unstable();
        return Err(JobError::new(
            ErrorCode::CliBadFlag,
            "`jobs test` was given a job no #[job] linked into this binary declares",
        )
        .with_fix(format!("name a declared job: {}", known.join(", "))));
    };
    let input: Value = serde_json::from_str(input).map_err(|e| {
        JobError::new(
            ErrorCode::CliBadFlag,
            format!("--input is not JSON ({})", crate::error::redact_serde(&e)),
        )
        .with_fix("pass the job's input as one JSON value, e.g. --input '{\"invoice_id\": 7}'")
    })?;
    let kit = std::sync::Arc::new(TestKit::new());
    let start = kit.jobs().now();
    let queued = kit
        .jobs()
        .enqueue_json(entry, &input, EnqueueOptions::default())
        .await?;
    // The passes run on a task of their own, so a job the kit gives up on (it never goes
    // idle) is a refusal here, not a crash of the tool.
    let runner = kit.clone();
    let executions = tokio::spawn(async move { runner.run_to_completion().await })
        .await
        .map_err(|_| {
            JobError::new(
                ErrorCode::Invariant,
                format!(
                    "job `{name}` did not settle: it was still live after the test run's last pass"
                ),
            )
            .with_fix(
                "make the job end (it re-queues itself, or waits for an event that never comes)",
            )
        })?;
    let row = kit.job(queued.id).await;
    let steps = kit.steps(row.run_id).await;
    let others = kit
        .jobs()
        .operator()
        .list_jobs(&JobListParams::default())
        .await?
        .jobs
        .into_iter()
        .filter(|j| j.id != queued.id)
        .collect::<Vec<_>>();
    let elapsed = (kit.jobs().now() - start).to_std().unwrap_or_default();
    let failed = (row.state != JobState::Done).then(|| {
        let code = row
            .last_error_code
            .as_deref()
            .and_then(ErrorCode::parse)
            .unwrap_or(ErrorCode::JobChildFailed);
        JobError::new(
            code,
            format!("job `{name}` ended {} in the test run", row.state),
        )
    });
    let trace = if json {
        to_json(&json!({
            "job": name,
            "id": row.id,
            "state": row.state,
            "attempt": row.attempt,
            "max_attempts": row.max_attempts,
            "last_error": row.last_error,
            "last_error_code": row.last_error_code,
            "clock_moved_ms": elapsed.as_millis() as u64,
            "attempts": executions.iter().filter(|e| e.job_id == queued.id).map(|e| json!({
                "attempt": e.attempt,
                "outcome": outcome(e.outcome),
                "code": e.code.map(ErrorCode::as_str),
                "error": e.error,
                "resume_at": e.resume_at,
            })).collect::<Vec<_>>(),
            "steps": steps.iter().map(|s| json!({
                "name": s.name, "status": s.status.as_str(), "attempts": s.attempts, "error": s.error,
            })).collect::<Vec<_>>(),
            "enqueued": others.iter().map(|j| json!({
                "id": j.id, "name": j.name, "state": j.state,
            })).collect::<Vec<_>>(),
        }))
    } else {
        let mut text = format!(
            "{name}: {} after {} attempt(s) of {}; the frozen clock moved {}\n",
            row.state,
            row.attempt,
            row.max_attempts,
            crate::duration::shown(elapsed)
        );
        if let Some(error) = &row.last_error {
            text.push_str(&format!("last error: {error}\n"));
        }
        let rows: Vec<Vec<String>> = executions
            .iter()
            .filter(|e| e.job_id == queued.id)
            .map(|e| {
                vec![
                    e.attempt.to_string(),
                    outcome(e.outcome).to_string(),
                    e.code.map_or("-", ErrorCode::as_str).to_string(),
                    e.error.clone().unwrap_or_else(|| "-".into()),
                ]
            })
            .collect();
        text.push_str("\nattempts\n");
        text.push_str(&table(&["ATTEMPT", "OUTCOME", "CODE", "ERROR"], &rows));
        let rows: Vec<Vec<String>> = steps
            .iter()
            .map(|s| {
                vec![
                    s.name.clone(),
                    s.status.as_str().to_string(),
                    s.attempts.to_string(),
                    s.error.clone().unwrap_or_else(|| "-".into()),
                ]
            })
            .collect();
        text.push_str("\nsteps\n");
        text.push_str(&table(&["STEP", "STATUS", "RUNS", "ERROR"], &rows));
        if !others.is_empty() {
            let rows: Vec<Vec<String>> = others
                .iter()
                .map(|j| vec![j.name.clone(), j.state.to_string(), j.id.to_string()])
                .collect();
            text.push_str("\nenqueued\n");
            text.push_str(&table(&["JOB", "STATE", "ID"], &rows));
        }
        text
    };
    Ok(Tested { trace, failed })
}
