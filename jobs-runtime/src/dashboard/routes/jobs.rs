//! The jobs list (filters by queue, state, job name and tenant; keyset pages both ways), the
//! dead letters, and the bulk actions on a selection.

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect};
use axum::Extension;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::{acting, audit, field, form, page, Page};
use crate::dashboard::access::Ctx;
use crate::dashboard::error::{bad_id, bad_parameter};
use crate::dashboard::Shared;
use crate::driver::introspect::{JobBulkParams, JobListParams, JobSummary, MAX_JOB_PAGE};
use crate::driver::JobState;
use crate::registry::Registry;

/// The list's query string.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ListQuery {
    queue: Option<String>,
    state: Option<String>,
    name: Option<String>,
    tenant: Option<String>,
    after: Option<String>,
    before: Option<String>,
    limit: Option<u32>,
    note: Option<String>,
    ok: Option<u32>,
    refused: Option<u32>,
}

fn given(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// `GET /jobs`.
pub(super) async fn list(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    Query(query): Query<ListQuery>,
) -> Page {
    render(dash, ctx, query, "jobs").await
}

/// `GET /dead`: the dead letters, the jobs list filtered on `dead`.
pub(super) async fn dead(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    Query(mut query): Query<ListQuery>,
) -> Page {
    query.state = Some("dead".into());
    render(dash, ctx, query, "dead").await
}

async fn render(dash: Shared, ctx: Ctx, query: ListQuery, view: &str) -> Page {
    let state = given(&query.state)
        .map(|s| {
            JobState::parse(&s).map_err(|_| {
                bad_parameter(
                    "the state filter",
                    "pick ready, delayed, running, suspended, done, failed, dead or cancelled",
                )
            })
        })
        .transpose()?;
    // A tenant's dashboard lists its own tenant whatever the filter says.
    let tenant = dash.options.tenant.clone().or_else(|| given(&query.tenant));
    let params = JobListParams {
        queue: given(&query.queue),
        name: given(&query.name),
        state,
        tenant_id: tenant.clone(),
        limit: Some(query.limit.unwrap_or(50).clamp(1, MAX_JOB_PAGE)),
        after: given(&query.after),
        before: given(&query.before),
        ..JobListParams::default()
    };
    let listed = dash.jobs.operator().list_jobs(&params).await?;
    let rows = with_errors(&listed.jobs);
    // The filters a page link keeps (the cursor is added per link).
    let filters: Vec<(&str, String)> = [
        ("queue", params.queue.clone()),
        (
            "state",
            if view == "dead" {
                None
            } else {
                state.map(|s| s.to_string())
            },
        ),
        ("name", params.name.clone()),
        (
            "tenant",
            if dash.options.tenant.is_some() {
                None
            } else {
                tenant
            },
        ),
        (
            "limit",
            query.limit.and(params.limit).map(|l| l.to_string()),
        ),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect();
    let keep = serde_urlencoded::to_string(&filters).unwrap_or_default();
    let link = |cursor: (&str, &Option<String>)| {
        cursor.1.as_ref().map(|c| {
            let pair = serde_urlencoded::to_string([(cursor.0, c)]).unwrap_or_default();
            if keep.is_empty() {
                pair
            } else {
                format!("{keep}&{pair}")
            }
        })
    };
    let path = if view == "dead" { "/dead" } else { "/jobs" };
    // One tab per state over the same queue, job and tenant filters.
    let others: Vec<&(&str, String)> = filters.iter().filter(|(k, _)| *k != "state").collect();
    let tab = |state: Option<&str>| {
        let mut pairs: Vec<(&str, &str)> = others.iter().map(|(k, v)| (*k, v.as_str())).collect();
        pairs.extend(state.map(|s| ("state", s)));
        let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
        if query.is_empty() {
            "/jobs".to_string()
        } else {
            format!("/jobs?{query}")
        }
    };
    let current = state.map(|s| s.to_string());
    let mut tabs = vec![json!({ "label": "all", "href": tab(None), "current": current.is_none() })];
    tabs.extend(JobState::ALL.iter().map(|s| {
        let s = s.to_string();
        json!({ "label": s, "href": tab(Some(&s)), "current": current.as_deref() == Some(s.as_str()) })
    }));
    page(
        &dash,
        &ctx,
        "jobs.html",
        query.note.as_deref(),
        json!({
            "view": view,
            "path": path,
            "jobs": rows,
            "tabs": tabs,
            "older": link(("after", &listed.after)),
            "newer": link(("before", &listed.before)),
            "filter": {
                "queue": params.queue,
                "state": state.map(|s| s.to_string()),
                "name": params.name,
                "tenant": params.tenant_id,
            },
            "states": JobState::ALL.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "names": Registry::global()
                .map(|r| r.entries().map(|e| e.descriptor().name).collect::<Vec<_>>())
                .unwrap_or_default(),
            "bulk": query.ok.map(|ok| json!({ "ok": ok, "refused": query.refused.unwrap_or(0) })),
        }),
    )
}

/// The most characters of an error a list row shows; the row's tooltip holds up to
/// [`TITLE_CHARS`], the job's page all of it.
const ROW_CHARS: usize = 120;
const TITLE_CHARS: usize = 1000;

/// The list's rows, each with its last error's message (shortened, on one line) beside its
/// code: an operator reads why a job failed without opening it.
fn with_errors(jobs: &[JobSummary]) -> Vec<serde_json::Value> {
    jobs.iter()
        .map(|job| {
            let mut row = json!(job);
            if let Some(error) = job.last_error.as_deref() {
                let line = error.split_whitespace().collect::<Vec<_>>().join(" ");
                row["error"] = json!(shorten(&line, ROW_CHARS));
                row["error_title"] = json!(shorten(&line, TITLE_CHARS));
            }
            row
        })
        .collect()
}

/// `text` cut to at most `chars` characters, an ellipsis marking a cut.
fn shorten(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", text[..at].trim_end()),
        None => text.to_string(),
    }
}

/// `POST /jobs/bulk`: `action` (retry, cancel or delete) on each selected `id`, one by one,
/// each refused or done on its own; the page then reports how many of each.
pub(super) async fn bulk(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    body: Bytes,
) -> Page {
    let form = form(&body)?;
    let action = field(&form, "action").unwrap_or_default().to_string();
    if !matches!(action.as_str(), "retry" | "cancel" | "delete") {
        return Err(bad_parameter(
            "the bulk action",
            "pick retry, cancel or delete",
        ));
    }
    let ids: Vec<Uuid> = form
        .iter()
        .filter(|(k, _)| k == "id")
        .map(|(_, v)| Uuid::parse_str(v))
        .collect::<Result<_, _>>()
        .map_err(|_| bad_id("a selected job id", "select jobs from the list"))?;
    if ids.len() > MAX_JOB_PAGE as usize {
        return Err(bad_parameter(
            "the selection",
            "select at most one page of jobs",
        ));
    }
    let jobs = acting(&dash, &ctx);
    let operator = jobs.operator();
    let (mut ok, mut refused) = (0u32, 0u32);
    for id in ids {
        let done = match action.as_str() {
            "retry" => operator.requeue(id, None).await.map(drop),
            "cancel" => operator.cancel(id).await.map(drop),
            _ => operator.remove(id).await.map(drop),
        };
        match done {
            Ok(()) => {
                audit(&ctx, &action, &id.to_string());
                ok += 1;
            }
            Err(_) => refused += 1,
        }
    }
    let back = field(&form, "back")
        .filter(|b| *b == "/dead")
        .unwrap_or("/jobs");
    let to = format!("{}{back}?note=bulk&ok={ok}&refused={refused}", ctx.base);
    Ok(Redirect::to(&to).into_response())
}

/// `POST /dead/retry`: requeues the dead letters matching the page's queue and job filters, up
/// to [`MAX_BULK_ROWS`](crate::driver::introspect::MAX_BULK_ROWS) a call (the operator's
/// `requeue_many`); the page reports how many moved and how many remain.
pub(super) async fn retry_dead(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    body: Bytes,
) -> Page {
    let form = form(&body)?;
    let params = JobBulkParams {
        state: JobState::Dead,
        queue: field(&form, "queue").map(str::to_string),
        name: field(&form, "name").map(str::to_string),
        tenant_id: None,
        actor: Some(ctx.identity.clone()),
        now: dash.jobs.now(),
    };
    let moved = dash.jobs.operator().requeue_many(&params).await?;
    let target = format!(
        "dead:queue={}:name={}",
        params.queue.as_deref().unwrap_or("*"),
        params.name.as_deref().unwrap_or("*")
    );
    audit(&ctx, "retry-dead", &target);
    let to = format!(
        "{}/dead?note=bulk&ok={}&refused={}",
        ctx.base, moved.affected, moved.remaining
    );
    Ok(Redirect::to(&to).into_response())
}

#[cfg(test)]
mod tests {
    use super::shorten;

    #[test]
    fn a_long_error_is_cut_on_a_character() {
        assert_eq!(shorten("short", 10), "short");
        assert_eq!(shorten("ééééé", 3), "ééé…");
        assert_eq!(shorten("ab  cd", 3), "ab…");
    }
}
