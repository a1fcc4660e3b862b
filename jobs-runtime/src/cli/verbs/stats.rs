//! `jobs stats`: per-queue counts and per-job outcomes over the last 24 hours.

use serde_json::json;

use crate::client::Jobs;
use crate::driver::introspect::CounterTotalsParams;
use crate::error::JobError;

use crate::cli::output::to_json;
use crate::cli::render::{self, table};

pub(in crate::cli) async fn stats(jobs: &Jobs, json: bool) -> Result<String, JobError> {
    let queues = jobs.stats().await?;
    let since = jobs.now() - chrono::Duration::hours(24);
    let totals = jobs
        .operator()
        .introspect()?
        .counter_totals(&CounterTotalsParams { since })
        .await?;
    if json {
        return Ok(to_json(&json!({ "queues": queues, "last_24h": totals })));
    }
    let mut text = render::queues(&queues, &[]);
    text.push_str("\nlast 24 hours, per job\n");
    let rows: Vec<Vec<String>> = totals
        .iter()
        .map(|t| {
            let runs = t.done + t.failed + t.dead;
            let attempts = t.done + t.retried + t.failed + t.dead;
            let mean = t
                .duration_ms
                .checked_div(attempts)
                .map_or("-".to_string(), |ms| format!("{ms}ms"));
            vec![
                t.name.clone(),
                t.done.to_string(),
                t.retried.to_string(),
                t.failed.to_string(),
                t.dead.to_string(),
                runs.to_string(),
                mean,
            ]
        })
        .collect();
    text.push_str(&table(
        &[
            "JOB",
            "DONE",
            "RETRIED",
            "FAILED",
            "DEAD",
            "ENDED",
            "MEAN ATTEMPT",
        ],
        &rows,
    ));
    Ok(text)
}
