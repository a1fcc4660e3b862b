//! `jobs show <id>`: one job in full (state, attempts, last error, progress, every step).

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
        // The declared rate limit, when the job is linked into this binary.
        let rate = crate::registry::Registry::global()
            .ok()
            .and_then(|r| r.get(&detail.job.name))
            .and_then(|entry| entry.descriptor().rate);
        render::show(&detail, rate, jobs.now())
    })
}
