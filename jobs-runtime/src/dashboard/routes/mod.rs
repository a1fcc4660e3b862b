//! The dashboard's routes, one module per page, and what they share: the page context, the
//! notes a redirect carries, the client an action runs on (acting as the viewer, so the store
//! records who did it), the audit line of an action, and the refusal of what spans every tenant
//! on a tenant's dashboard.

mod assets;
mod books;
mod job;
mod jobs;
mod manifest;
mod overview;
mod queues;
mod tasks;

use axum::http::header;
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};

use super::access::{guard, Ctx};
use super::error::Refusal;
use super::pages::pages;
use super::Shared;
use crate::client::Jobs;
use crate::driver::QueueStats;
use crate::error::{ErrorCode, JobError};
use crate::registry::Registry;

/// Every route, behind the guard.
pub(crate) fn router(dash: Shared) -> Router {
    Router::new()
        .route("/", get(overview::show))
        .route("/jobs", get(jobs::list))
        .route("/dead", get(jobs::dead))
        .route("/jobs/bulk", post(jobs::bulk))
        .route("/dead/retry", post(jobs::retry_dead))
        .route("/jobs/{id}", get(job::show))
        .route("/jobs/{id}/{action}", post(job::act))
        .route("/queues", get(queues::list))
        .route("/queues/{queue}/{action}", post(queues::act))
        .route("/workers", get(queues::workers))
        .route("/tasks", get(tasks::list))
        .route("/tasks/{task}/{action}", post(tasks::act))
        .route("/backfills", get(books::backfills))
        .route("/ledger", get(books::ledger))
        .route("/manifest", get(manifest::list))
        .route(
            "/manifest/{job}",
            get(manifest::form).post(manifest::enqueue),
        )
        .route("/metrics", get(overview::metrics))
        .route("/assets/{file}", get(assets::file))
        .layer(from_fn_with_state(dash.clone(), guard))
        .with_state(dash)
}

type Page = Result<Response, Refusal>;

/// Each queue's depth ([`crate::Jobs`]'s `depth`, which leaves done rows uncounted), with
/// every queue a registered job names listed even when it holds none of those rows.
async fn depths(dash: &Shared) -> Result<Vec<QueueStats>, JobError> {
    let mut queues = dash.jobs.depth().await?;
    if let Ok(registry) = Registry::global() {
        for entry in registry.entries() {
            let queue = entry.descriptor().queue;
            if !queues.iter().any(|q| q.queue == queue) {
                queues.push(QueueStats {
                    queue: queue.to_string(),
                    ..QueueStats::default()
                });
            }
        }
    }
    queues.sort_by(|a, b| a.queue.cmp(&b.queue));
    Ok(queues)
}

/// Renders `template` over `extra` and what every page shows: the viewer, the mount path, the
/// time, the refresh interval, the tenant and the note a redirect left.
fn page(dash: &Shared, ctx: &Ctx, template: &str, note: Option<&str>, extra: Value) -> Page {
    // The navigation's current page: the list's view (jobs or dead), else the template's name.
    let nav = extra
        .get("view")
        .and_then(Value::as_str)
        .unwrap_or(template.trim_end_matches(".html"))
        .to_string();
    let mut context = json!({
        "nav": nav,
        "ctx": ctx,
        "now": dash.jobs.now(),
        "refresh_secs": dash.options.refresh.as_secs(),
        "tenant": dash.options.tenant,
        "note": note.and_then(note_text),
    });
    if let (Some(context), Value::Object(extra)) = (context.as_object_mut(), extra) {
        context.extend(extra);
    }
    let html = pages()?.render(template, &context)?;
    let mut response = html.into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    Ok(response)
}

/// The notes a redirect after an action may name (a fixed set: nothing a request sends is
/// shown back as a note).
fn note_text(key: &str) -> Option<&'static str> {
    Some(match key {
        "requeued" => "Requeued: due now.",
        "cancelled" => "Cancelled.",
        "promoted" => "Promoted: due now.",
        "deleted" => "Deleted, with its steps.",
        "paused" => "Paused: no worker claims from it from its next claim on.",
        "resumed" => "Resumed.",
        "fired" => "Fired now.",
        "enqueued" => "Enqueued.",
        "deduped" => "A live job already held this key: this is that job.",
        "bulk" => "The selection was handled; see the counts above the list.",
        _ => return None,
    })
}

/// A `303 See Other` to `path` under the mount path, with a note.
fn back(ctx: &Ctx, path: &str, note: &str) -> Response {
    let sep = if path.contains('?') { '&' } else { '?' };
    Redirect::to(&format!("{}{path}{sep}note={note}", ctx.base)).into_response()
}

/// The client an action runs on: the dashboard's, acting as the viewer, so the store records
/// the viewer's identity with the act (the job's history, a queue's `paused_by`, an enqueued
/// job's actor).
fn acting(dash: &Shared, ctx: &Ctx) -> Jobs {
    dash.jobs.acting_as(ctx.identity.clone())
}

/// The audit line of an action: who did what to which job, queue or task. The store keeps the
/// durable record of the acts on jobs (their history) and of a queue's pause; this log line is
/// also the only record of a queue's resume and a task's pause and resume.
fn audit(ctx: &Ctx, verb: &str, target: &str) {
    tracing::info!(target: "jobs::dashboard", actor = %ctx.identity, verb, target, "dashboard action");
}

/// What spans every tenant is not shown, nor changed, on a tenant's dashboard.
fn fleet_wide(dash: &Shared, what: &str) -> Result<(), Refusal> {
    match dash.options.tenant {
        Some(_) => Err(Refusal(
            JobError::new(
                ErrorCode::DashboardForbidden,
                format!(
                    "a tenant's dashboard does not show or change {what}: it spans every tenant"
                ),
            )
            .with_fix("use a dashboard mounted without a tenant for the fleet-wide pages"),
        )),
        None => Ok(()),
    }
}

/// The posted form's pairs, in order.
fn form(body: &[u8]) -> Result<Vec<(String, String)>, Refusal> {
    serde_urlencoded::from_bytes(body).map_err(|_| {
        super::error::bad_parameter("the form", "submit the form from a dashboard page")
    })
}

/// The first value of `name` in a form, when not empty.
fn field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// The `?note=` of a page.
#[derive(Debug, Default, serde::Deserialize)]
struct Note {
    note: Option<String>,
}

/// A store that lacks a part answers `X_NOT_IMPLEMENTED`: the page says so instead of failing.
fn offered<T>(result: Result<T, JobError>) -> Result<Option<T>, Refusal> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(e) if e.is(ErrorCode::NotImplemented) => Ok(None),
        Err(e) => Err(Refusal(e)),
    }
}
