//! The queues (depth, paused flag, pause and resume) and the live workers (with the queue
//! limits each announced, and the queues whose workers disagree on them).

use axum::extract::{Path, Query, State};
use axum::Extension;
use serde_json::json;

use super::{acting, audit, back, fleet_wide, page, Note, Page};
use crate::dashboard::access::Ctx;
use crate::dashboard::error::bad_parameter;
use crate::dashboard::Shared;
use crate::driver::introspect::queue_limits_spread;

/// `GET /queues`.
pub(super) async fn list(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    Query(note): Query<Note>,
) -> Page {
    fleet_wide(&dash, "queues")?;
    // The page shows no done count: `depth` leaves the done rows uncounted.
    let queues = super::depths(&dash).await?;
    let paused = dash.jobs.operator().introspect()?.queue_paused().await?;
    // A paused queue with no jobs yet still shows, so it can be resumed.
    let mut rows: Vec<_> = queues
        .iter()
        .map(|q| {
            let pause = paused.iter().find(|p| p.queue == q.queue);
            json!({
                "queue": q.queue,
                "stats": q,
                "paused_at": pause.map(|p| p.paused_at),
                "paused_by": pause.and_then(|p| p.paused_by.as_deref()),
            })
        })
        .collect();
    for p in paused
        .iter()
        .filter(|p| !queues.iter().any(|q| q.queue == p.queue))
    {
        rows.push(json!({
            "queue": p.queue,
            "stats": null,
            "paused_at": p.paused_at,
            "paused_by": p.paused_by,
        }));
    }
    page(
        &dash,
        &ctx,
        "queues.html",
        note.note.as_deref(),
        json!({ "queues": rows }),
    )
}

/// `POST /queues/{queue}/{pause|resume}`.
pub(super) async fn act(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    Path((queue, action)): Path<(String, String)>,
) -> Page {
    fleet_wide(&dash, "queues")?;
    let jobs = acting(&dash, &ctx);
    let operator = jobs.operator();
    let note = match action.as_str() {
        "pause" => {
            operator.pause_queue(&queue).await?;
            "paused"
        }
        "resume" => {
            operator.resume_queue(&queue).await?;
            "resumed"
        }
        _ => return Err(bad_parameter("the queue action", "use pause or resume")),
    };
    audit(&ctx, &action, &format!("queue:{queue}"));
    Ok(back(&ctx, "/queues", note))
}

/// `GET /workers`: host, queues, busy slots, the fleet-wide queue limits each announced, and
/// heartbeat; above them, every queue whose workers announce different limits.
pub(super) async fn workers(State(dash): State<Shared>, Extension(ctx): Extension<Ctx>) -> Page {
    fleet_wide(&dash, "workers")?;
    let workers = dash.jobs.operator().workers().await?;
    let spread = queue_limits_spread(&workers);
    let differs = |queue: &str| spread.iter().any(|s| s.queue == queue);
    let rows: Vec<serde_json::Value> = workers
        .iter()
        .map(|w| {
            let mut row = json!(w);
            row["limits"] = w
                .settings
                .queue_limits
                .iter()
                .map(|l| json!({ "queue": l.queue, "text": l.to_string(), "differs": differs(&l.queue) }))
                .collect();
            row
        })
        .collect();
    let spread: Vec<serde_json::Value> = spread
        .iter()
        .map(|s| {
            let announced: Vec<serde_json::Value> = s
                .announced
                .iter()
                .map(|a| {
                    let text = a
                        .limits
                        .as_ref()
                        .map_or_else(|| "no limits".to_string(), ToString::to_string);
                    json!({ "text": text, "workers": a.workers })
                })
                .collect();
            json!({ "queue": s.queue, "announced": announced })
        })
        .collect();
    page(
        &dash,
        &ctx,
        "workers.html",
        None,
        json!({ "workers": rows, "spread": spread }),
    )
}
