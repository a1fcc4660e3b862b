//! One job: its state, attempts, timings, progress, step timeline, last error, input and kept
//! result (redacted as the CLI shows them, revealed only to a manager who asks), keys, and its
//! actions.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::Extension;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::{acting, audit, back, field, form, page, Page};
use crate::dashboard::access::Ctx;
use crate::dashboard::error::{bad_id, bad_parameter, Refusal};
use crate::dashboard::Shared;
use crate::driver::introspect::{JobHistoryEntry, JobVerb, BULK_DETAIL};
use crate::driver::JobState;
use crate::error::{ErrorCode, JobError};
use crate::registry::Registry;

/// The job page's query string.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ShowQuery {
    reveal: Option<String>,
    note: Option<String>,
}

fn job_id(text: &str) -> Result<Uuid, Refusal> {
    Uuid::parse_str(text).map_err(|_| bad_id("the job id", "open a job from the jobs list"))
}

/// `GET /jobs/{id}`; `?reveal=1` shows the stored input and kept result (manage role only).
pub(super) async fn show(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
    Query(query): Query<ShowQuery>,
) -> Page {
    let id = job_id(&id)?;
    let operator = dash.jobs.operator();
    let detail = operator.inspect_job(id).await?;
    let reveal = query.reveal.as_deref().is_some_and(|r| r == "1");
    if reveal && !ctx.manage {
        return Err(Refusal(JobError::new(
            ErrorCode::DashboardForbidden,
            format!(
                "viewer `{}` may not reveal inputs: that needs the manage role",
                ctx.identity
            ),
        )));
    }
    // The stored row: its input is read for the concurrency and rate keys, and shown only on
    // reveal.
    let stored = dash.jobs.job(id).await?;
    let entry = Registry::global()
        .ok()
        .and_then(|r| r.get(&detail.job.name));
    let concurrency_key = match (&stored, entry) {
        (Some(row), Some(entry)) => entry.concurrency_key(&row.input),
        _ => None,
    };
    // The declared rate limit, and the key this run's start counts under.
    let rate = entry
        .and_then(|e| e.descriptor().rate)
        .map(|r| json!({ "limit": r.limit, "per_ms": r.per.as_millis() as u64, "keyed": r.keyed }));
    // The declared expiry (counted from the enqueue) and debounce window.
    let expires_in = entry.and_then(|e| e.descriptor().expires_in);
    let expires_at = expires_in.map(|ttl| crate::clock::add(detail.job.created_at, ttl));
    let debounce_ms = entry
        .and_then(|e| e.descriptor().debounce)
        .map(|d| d.as_millis() as u64);
    // The job's own unique period (its enqueue may have named another than the declared one),
    // as the time from its creation to `unique_until`, and whether it still holds the key.
    let unique_until = detail.job.unique_until;
    let unique_ms = unique_until.map(|until| {
        let ms = until
            .signed_duration_since(detail.job.created_at)
            .num_milliseconds();
        u64::try_from(ms).unwrap_or(0)
    });
    let unique_holds = crate::driver::holds_key(detail.job.state, unique_until, dash.jobs.now());
    let rate_key = match (&stored, entry) {
        (Some(row), Some(entry)) => entry.rate_key(&row.input),
        _ => None,
    };
    // The kept result (`keep_result`) is a payload as the input is: redacted the same way,
    // revealed by the same act.
    let (input, result) = match (&stored, reveal) {
        (Some(row), true) => {
            audit(&ctx, "reveal", &id.to_string());
            (row.input.clone(), row.result.clone())
        }
        _ => (detail.job.input.clone(), detail.job.result.clone()),
    };
    let state = detail.job.state;
    // Only a job with links has a workflow to draw.
    let links = &detail.links;
    let graph = if links.depends_on.is_empty()
        && links.dependents.is_empty()
        && links.parent.is_none()
        && links.children.is_empty()
    {
        None
    } else {
        crate::dashboard::graph::around(&dash.jobs, id)
            .await
            .ok()
            .flatten()
    };
    let history: Vec<_> = detail.history.iter().map(history_row).collect();
    let note = query.note.as_deref().filter(|note| still_true(note, state));
    // A step's error is the job's last error when that step is what failed last: shown once,
    // under Last error, and the step points there.
    let last_error = detail.job.last_error.as_deref();
    let steps: Vec<_> = detail
        .steps
        .iter()
        .map(|s| {
            let mut step = json!(s);
            // The job's last error opens with the failed step's (a terminal failure adds why
            // it was not retried).
            let repeats = match (s.error.as_deref(), last_error) {
                (Some(step), Some(last)) => last.starts_with(step),
                _ => false,
            };
            step["error_is_last"] = json!(repeats);
            step
        })
        .collect();
    page(
        &dash,
        &ctx,
        "job.html",
        note,
        json!({
            "job": detail.job,
            "steps": steps,
            "history": history,
            "input": input,
            "result": result,
            "has_result": result.is_some(),
            "revealed": reveal,
            "concurrency_key": concurrency_key,
            "rate": rate,
            "rate_key": rate_key,
            "expires_in_ms": expires_in.map(|d| d.as_millis() as u64),
            "expires_at": expires_at.map(|t| t.to_rfc3339()),
            "debounce_ms": debounce_ms,
            "unique_ms": unique_ms,
            "unique_holds": unique_holds,
            "blocked": crate::driver::is_blocked(state, detail.job.run_at),
            "links": detail.links,
            "batch": detail.batch,
            "graph": graph,
            "can": {
                "retry": !state.is_live(),
                "cancel": state.is_live(),
                "promote": matches!(state, JobState::Delayed | JobState::Ready),
                "delete": state != JobState::Running,
            },
        }),
    )
}

/// Whether the note an action's redirect left still says what the job is: "Requeued: due
/// now" only while it waits to run, "Cancelled" only while cancelled. Once the job moved on
/// (a worker ran it), the note is dropped and the badge alone tells.
fn still_true(note: &str, state: JobState) -> bool {
    match note {
        "requeued" | "promoted" => matches!(state, JobState::Ready | JobState::Delayed),
        "cancelled" => state == JobState::Cancelled,
        _ => true,
    }
}

/// `POST /jobs/{id}/{action}`: retry (optionally `from_step`), cancel, promote or delete.
pub(super) async fn act(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    Path((id, action)): Path<(String, String)>,
    body: Bytes,
) -> Page {
    let id = job_id(&id)?;
    let form = form(&body)?;
    let jobs = acting(&dash, &ctx);
    let operator = jobs.operator();
    let path = format!("/jobs/{id}");
    let note = match action.as_str() {
        "retry" => {
            let from_step = field(&form, "from_step");
            operator.requeue(id, from_step).await?;
            "requeued"
        }
        "cancel" => {
            operator.cancel(id).await?;
            "cancelled"
        }
        "promote" => {
            operator.promote(id).await?;
            "promoted"
        }
        "delete" => {
            operator.remove(id).await?;
            audit(&ctx, "delete", &id.to_string());
            return Ok(back(&ctx, "/jobs", "deleted"));
        }
        _ => {
            return Err(bad_parameter(
                "the action",
                "use retry, cancel, promote or delete",
            ))
        }
    };
    audit(&ctx, &action, &id.to_string());
    Ok(back(&ctx, &path, note))
}

/// One row of the History section: when, who, and what in words (the step a retry started
/// from, and whether a bulk action did it, apart, so the template escapes each).
fn history_row(entry: &JobHistoryEntry) -> serde_json::Value {
    let what = match JobVerb::parse(&entry.verb) {
        Some(JobVerb::Enqueue) => "enqueued",
        Some(JobVerb::Requeue) => "retried",
        Some(JobVerb::RequeueFromStep) => "retried from step",
        Some(JobVerb::Cancel) => "cancelled",
        Some(JobVerb::Promote) => "made due now",
        Some(JobVerb::Remove) => "deleted",
        None => entry.verb.as_str(),
    };
    let bulk = entry.detail.as_deref() == Some(BULK_DETAIL);
    json!({
        "at": entry.at,
        "actor": entry.actor,
        "what": what,
        "step": entry.detail.as_deref().filter(|_| !bulk),
        "bulk": bulk,
    })
}
