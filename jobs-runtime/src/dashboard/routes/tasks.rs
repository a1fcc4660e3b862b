//! The scheduled tasks: cron in words, zone, last and next fires, paused; pause, resume and
//! run now. A store without a scheduler store shows what the binary declares, with no fires.

use axum::extract::{Path, Query, State};
use axum::Extension;
use serde_json::json;

use super::{acting, audit, back, fleet_wide, offered, page, Note, Page};
use crate::dashboard::access::Ctx;
use crate::dashboard::cron_words::describe;
use crate::dashboard::error::{bad_parameter, Refusal};
use crate::dashboard::Shared;
use crate::error::{ErrorCode, JobError};
use crate::registry::Registry;

/// `GET /tasks`.
pub(super) async fn list(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    Query(note): Query<Note>,
) -> Page {
    fleet_wide(&dash, "tasks")?;
    let tasks = dash.jobs.tasks();
    let fires = offered(tasks.fires().await)?;
    let paused = offered(tasks.paused().await)?;
    let leader = offered(tasks.leader().await)?.flatten();
    let registry = Registry::global().ok();
    let now = dash.jobs.now();
    let mut names: Vec<String> = registry
        .map(|r| r.tasks().map(|t| t.descriptor().name.to_string()).collect())
        .unwrap_or_default();
    names.extend(fires.iter().flatten().map(|f| f.task.clone()));
    names.extend(paused.iter().flatten().cloned());
    names.sort();
    names.dedup();
    let rows: Vec<_> = names
        .iter()
        .map(|name| {
            let declared = registry.and_then(|r| r.task(name)).map(|t| *t.descriptor());
            let fire = fires.iter().flatten().find(|f| f.task == *name);
            json!({
                "task": name,
                "cron": declared.map(|d| d.cron),
                "words": declared.map(|d| describe(d.cron)),
                "tz": declared.map(|d| d.tz),
                "next": declared.and_then(|d| crate::scheduler::next_after(&d, now)),
                "last_occurrence": fire.map(|f| f.occurrence),
                "last_fired_at": fire.map(|f| f.fired_at),
                "paused": paused.iter().flatten().any(|p| p == name),
                "declared": declared.is_some(),
            })
        })
        .collect();
    page(
        &dash,
        &ctx,
        "tasks.html",
        note.note.as_deref(),
        json!({ "tasks": rows, "store": fires.is_some(), "leader": leader }),
    )
}

/// `POST /tasks/{task}/{pause|resume|run}`.
pub(super) async fn act(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    Path((task, action)): Path<(String, String)>,
) -> Page {
    fleet_wide(&dash, "tasks")?;
    let tasks = dash.jobs.tasks();
    let note = match action.as_str() {
        "pause" => {
            tasks.pause(&task).await?;
            "paused"
        }
        "resume" => {
            tasks.resume(&task).await?;
            "resumed"
        }
        "run" => {
            let entry = Registry::global()?.task(&task).ok_or_else(|| {
                Refusal(
                    JobError::new(
                        ErrorCode::JobNotFound,
                        format!("no task `{task}` is declared in this binary"),
                    )
                    .with_fix("run a task the binary serving the dashboard links"),
                )
            })?;
            // The fired jobs carry the viewer as their actor: who ran the task.
            crate::scheduler::fire_entry_now(&acting(&dash, &ctx), entry).await?;
            "fired"
        }
        _ => return Err(bad_parameter("the task action", "use pause, resume or run")),
    };
    audit(&ctx, &action, &format!("task:{task}"));
    Ok(back(&ctx, "/tasks", note))
}
