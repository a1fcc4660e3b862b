//! `jobs ls` (the queues' depth over a page of jobs, the default verb) and `jobs workers`: the
//! listings of what the queue holds and who works it.

use serde_json::json;

use crate::client::Jobs;
use crate::driver::introspect::{JobListParams, DEFAULT_JOB_PAGE};
use crate::driver::JobState;
use crate::error::{ErrorCode, JobError};

use crate::cli::args::LsArgs;
use crate::cli::output::to_json;
use crate::cli::render;

/// `jobs ls`: one page of jobs under the depth of every queue, with the cursors to page on.
pub(in crate::cli) async fn ls(jobs: &Jobs, args: LsArgs, json: bool) -> Result<String, JobError> {
    let params = JobListParams {
        queue: args.queue,
        name: args.name,
        state: parse_state(args.state.as_deref())?,
        tenant_id: args.tenant,
        limit: args.limit,
        after: args.after,
        before: args.before,
        ..JobListParams::default()
    };
    let page = jobs.operator().list_jobs(&params).await?;
    let queues = jobs.stats().await?;
    let paused = jobs.operator().introspect()?.queue_paused().await?;
    if json {
        return Ok(to_json(&json!({
            "queues": queues,
            "paused": paused,
            "jobs": page.jobs,
            "after": page.after,
            "before": page.before,
        })));
    }
    let mut text = render::queues(&queues, &paused);
    text.push('\n');
    text.push_str(&render::jobs(&page.jobs, jobs.now()));
    if page.jobs.len() as u32 >= params.limit.unwrap_or(DEFAULT_JOB_PAGE) {
        if let Some(after) = &page.after {
            text.push_str(&format!("next page: jobs ls --after {after}\n"));
        }
    }
    if let Some(before) = &page.before {
        text.push_str(&format!("previous page: jobs ls --before {before}\n"));
    }
    Ok(text)
}

/// `jobs workers`: the live workers.
pub(in crate::cli) async fn workers(jobs: &Jobs, json: bool) -> Result<String, JobError> {
    let workers = jobs.operator().workers().await?;
    Ok(if json {
        to_json(&workers)
    } else {
        render::workers(&workers, jobs.now())
    })
}

/// `--state` as a [`JobState`], refused as a bad flag when it names none.
fn parse_state(state: Option<&str>) -> Result<Option<JobState>, JobError> {
    state
        .map(|s| {
            JobState::parse(s).map_err(|_| {
                JobError::new(
                    ErrorCode::CliBadFlag,
                    format!("`--state {s}` is not a state"),
                )
                .with_fix("use ready, delayed, running, suspended, done, failed, dead or cancelled")
            })
        })
        .transpose()
}
