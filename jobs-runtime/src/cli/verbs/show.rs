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
    Ok(if json {
        to_json(&detail)
    } else {
        // The declaration (its rate, expiry and debounce), when the job is linked into this
        // binary.
        let declared = crate::registry::Registry::global()
            .ok()
            .and_then(|r| r.get(&detail.job.name))
            .map(|entry| *entry.descriptor());
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
