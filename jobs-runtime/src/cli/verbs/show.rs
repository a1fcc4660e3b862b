//! `jobs show <id>`: one job in full (state, attempts, last error, progress, every step);
//! `jobs batch <id>`: one batch (its callback, whether it is closed, its counts, the members
//! that did not complete).

use uuid::Uuid;

use crate::client::Jobs;
use crate::error::JobError;

use crate::cli::output::to_json;
use crate::cli::render;

pub(in crate::cli) async fn show(jobs: &Jobs, id: Uuid, json: bool) -> Result<String, JobError> {
    let detail = jobs.operator().inspect_job(id).await?;
    // The declaration (its retry curve, rate, expiry and debounce), when the job is linked
    // into this binary.
    let declared = crate::registry::Registry::global()
        .ok()
        .and_then(|r| r.get(&detail.job.name))
        .map(|entry| *entry.descriptor());
    Ok(if json {
        let mut value = serde_json::to_value(&detail).unwrap_or_default();
        // The un-jittered delays before each retry the job may still get (null when the job is
        // not linked into this binary, so its curve is unknown here).
        let delays = declared.map(|d| {
            let j = &detail.job;
            crate::retry::remaining_delays(&d.retry, j.state, j.attempt, j.max_attempts)
                .iter()
                .map(|d| d.as_millis() as u64)
                .collect::<Vec<_>>()
        });
        value["remaining_retry_delays_ms"] = serde_json::json!(delays);
        to_json(&value)
    } else {
        render::show(&detail, declared, jobs.now())
    })
}

pub(in crate::cli) async fn batch(jobs: &Jobs, id: Uuid, json: bool) -> Result<String, JobError> {
    let report = jobs.batch_report(id).await?;
    Ok(if json {
        to_json(&report)
    } else {
        render::batch(&report)
    })
}
