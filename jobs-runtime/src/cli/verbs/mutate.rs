//! The verbs that change one job (`retry`, `cancel`, `rm`, `promote`) or one queue (`pause`,
//! `resume`, `drain`). Each is recorded under the handle's actor (`--actor`; a drain's moves
//! are the claim's and the settle's own writes, with no history row), and each answers the row
//! as it is after the change.

use serde_json::json;
use uuid::Uuid;

use crate::client::Jobs;
use crate::driver::JobState;
use crate::error::{ErrorCode, JobError};

use crate::cli::output::to_json;

/// `jobs retry <id>`: re-queues a finished job, from a step with `--from-step`.
pub(in crate::cli) async fn retry(
    jobs: &Jobs,
    id: Uuid,
    from_step: Option<String>,
    json: bool,
) -> Result<String, JobError> {
    let row = jobs.operator().requeue(id, from_step.as_deref()).await?;
    Ok(if json {
        to_json(&row)
    } else {
        let from = from_step.map_or(String::new(), |s| format!(" from step `{s}`"));
        format!(
            "requeued {id}{from}: {} on `{}`, due now\n",
            row.state, row.queue
        )
    })
}

/// `jobs cancel <id> [--reason <why>]`: cancels a live job, the reason recorded in its history.
pub(in crate::cli) async fn cancel(
    jobs: &Jobs,
    id: Uuid,
    reason: Option<&str>,
    json: bool,
) -> Result<String, JobError> {
    let was = jobs.job(id).await?.map(|r| r.state);
    match reason {
        Some(reason) => jobs.cancel_with_reason(id, reason).await?,
        None => jobs.cancel(id).await?,
    };
    // Re-read: exit 0 means the row is cancelled now.
    let row = jobs
        .job(id)
        .await?
        .ok_or_else(|| JobError::new(ErrorCode::JobNotCancellable, format!("job {id} vanished")))?;
    if row.state != JobState::Cancelled {
        return Err(JobError::new(
            ErrorCode::JobNotCancellable,
            format!("job {id} is {} after the cancel", row.state),
        ));
    }
    Ok(if json {
        to_json(&row)
    } else if was == Some(JobState::Running) {
        format!("cancelled {id} (it was running: its worker stops it at its next heartbeat)\n")
    } else {
        format!(
            "cancelled {id} (was {})\n",
            was.map_or("unknown".into(), |s| s.to_string())
        )
    })
}

/// `jobs rm <id>`: deletes a job that is not running, and its steps.
pub(in crate::cli) async fn remove(jobs: &Jobs, id: Uuid, json: bool) -> Result<String, JobError> {
    let row = jobs.operator().remove(id).await?;
    Ok(if json {
        to_json(&row)
    } else {
        format!(
            "removed {id} ({} `{}`) and its steps\n",
            row.state, row.name
        )
    })
}

/// `jobs promote <id>`: makes a delayed (or backing-off) job due now.
pub(in crate::cli) async fn promote(jobs: &Jobs, id: Uuid, json: bool) -> Result<String, JobError> {
    let row = jobs.operator().promote(id).await?;
    Ok(if json {
        to_json(&row)
    } else {
        format!("promoted {id}: due now on `{}`\n", row.queue)
    })
}

/// `jobs pause <queue>`: stops every worker claiming from a queue.
pub(in crate::cli) async fn pause(
    jobs: &Jobs,
    queue: String,
    json: bool,
) -> Result<String, JobError> {
    jobs.operator().pause_queue(&queue).await?;
    Ok(if json {
        to_json(&json!({ "queue": queue, "paused": true }))
    } else {
        format!("paused `{queue}`: no worker claims from it from its next claim on\n")
    })
}

/// `jobs resume <queue>`: lets workers claim from a paused queue again.
pub(in crate::cli) async fn resume(
    jobs: &Jobs,
    queue: String,
    json: bool,
) -> Result<String, JobError> {
    let was = jobs.operator().resume_queue(&queue).await?;
    Ok(if json {
        to_json(&json!({ "queue": queue, "paused": false, "was_paused": was }))
    } else if was {
        format!("resumed `{queue}`\n")
    } else {
        format!("`{queue}` was not paused\n")
    })
}

/// `jobs drain <queue>`: the queue's lapsed runs buried (final attempt) or back to ready.
pub(in crate::cli) async fn drain(
    jobs: &Jobs,
    queue: String,
    json: bool,
) -> Result<String, JobError> {
    let report = jobs.operator().drain(&queue).await?;
    if json {
        return Ok(to_json(&report));
    }
    let mut text = format!(
        "drained `{queue}`: {} lapsed run(s) back to ready, due now; {} buried dead on their final attempt; {} running under a live lease, left alone\n",
        report.requeued.len(),
        report.buried.len(),
        report.running
    );
    for id in &report.requeued {
        text.push_str(&format!("  requeued {id}\n"));
    }
    for id in &report.buried {
        text.push_str(&format!("  buried   {id}\n"));
    }
    if report.more {
        text.push_str("more lapsed runs remain: run `jobs drain` again\n");
    }
    Ok(text)
}
