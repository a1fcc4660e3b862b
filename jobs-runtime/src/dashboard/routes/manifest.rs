//! The manifest: every job linked into the binary with its input schema, and an enqueue form
//! built from that schema, with a priority choice (the job's declared priority chosen). The
//! browser checks the form against the schema's types before it is sent; the job's own input
//! type checks it again, and the priority is checked as `EnqueueOptions::priority` is, before
//! anything is written.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::Extension;
use serde_json::json;

use super::{audit, back, page, Page};
use crate::dashboard::access::{may_act, Ctx};
use crate::dashboard::error::Refusal;
use crate::dashboard::{schema_form, Shared};
use crate::driver::{DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY};
use crate::enqueue::EnqueueOptions;
use crate::error::{ErrorCode, JobError};

/// The form's priority field. The input's fields are named `f.<property>` (or `input`, for a
/// schema without properties), so no input field can take this name.
const PRIORITY_FIELD: &str = "priority";
use crate::registry::{JobEntry, Registry};

/// `GET /manifest`.
pub(super) async fn list(State(dash): State<Shared>, Extension(ctx): Extension<Ctx>) -> Page {
    let manifest = crate::manifest()?;
    page(
        &dash,
        &ctx,
        "manifest.html",
        None,
        json!({ "jobs": manifest.jobs(), "tasks": manifest.tasks() }),
    )
}

fn entry(name: &str) -> Result<&'static JobEntry, Refusal> {
    Registry::global()?.get(name).ok_or_else(|| {
        Refusal(
            JobError::new(
                ErrorCode::JobNotFound,
                format!("no job `{name}` is declared in this binary"),
            )
            .with_fix("pick a job from the manifest page"),
        )
    })
}

/// `GET /manifest/{job}`: the enqueue form, for a viewer who may act (a reader is refused as
/// its post would be).
pub(super) async fn form_page(dash: &Shared, ctx: &Ctx, name: &str) -> Page {
    may_act(&ctx.identity, ctx.access)?;
    let entry = entry(name)?;
    let d = entry.descriptor();
    let schema = (d.input_schema)();
    let fields = schema_form::fields(&schema);
    // Highest first, as the claim takes them.
    let priorities: Vec<serde_json::Value> = (MIN_PRIORITY..=MAX_PRIORITY)
        .rev()
        .map(|p| {
            let says = match p {
                MAX_PRIORITY => " (claimed first)",
                MIN_PRIORITY => " (claimed last)",
                DEFAULT_PRIORITY => " (default)",
                _ => "",
            };
            json!({ "value": p, "label": format!("{p}{says}"), "declared": p == d.priority })
        })
        .collect();
    page(
        dash,
        ctx,
        "enqueue.html",
        None,
        json!({ "name": d.name, "queue": d.queue, "input_type": d.input_type, "schema": schema, "fields": fields, "priority_field": PRIORITY_FIELD, "priorities": priorities }),
    )
}

/// `GET /manifest/{job}`.
pub(super) async fn form(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    Path(name): Path<String>,
) -> Page {
    form_page(&dash, &ctx, &name).await
}

/// `POST /manifest/{job}`: enqueue from the form, as the viewer (the job's actor).
pub(super) async fn enqueue(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    Path(name): Path<String>,
    body: Bytes,
) -> Page {
    let entry = entry(&name)?;
    let posted = super::form(&body)?;
    let fields = schema_form::fields(&(entry.descriptor().input_schema)());
    let input = schema_form::read(&fields, &posted)?;
    tenant_given(entry, &input)?;
    let mut options = EnqueueOptions::default();
    if let Some(chosen) = priority(entry, &posted)? {
        options = options.priority(chosen);
    }
    let queued = dash
        .jobs
        .acting_as(ctx.identity.clone())
        .enqueue_json(entry, &input, options)
        .await?;
    audit(&ctx, "enqueue", &queued.id.to_string());
    let note = if queued.deduped {
        "deduped"
    } else {
        "enqueued"
    };
    Ok(back(&ctx, &format!("/jobs/{}", queued.id), note))
}

/// The priority the form chose, `None` when it sent none (the job's declared priority then
/// holds). A value that is no whole number, or one outside the range, is refused with
/// `X_INVARIANT`, as `EnqueueOptions::priority` refuses it; the message never repeats it.
fn priority(entry: &JobEntry, posted: &[(String, String)]) -> Result<Option<i16>, Refusal> {
    let Some(text) = super::field(posted, PRIORITY_FIELD) else {
        return Ok(None);
    };
    let name = entry.descriptor().name;
    let chosen: i16 = text.trim().parse().map_err(|_| {
        Refusal(
            JobError::new(
                ErrorCode::Invariant,
                format!("the priority the enqueue form sent for job `{name}` is not a whole number"),
            )
            .with_fix(format!(
                "choose a priority from {MIN_PRIORITY} (claimed last) to {MAX_PRIORITY} (claimed first) in the form; {DEFAULT_PRIORITY} is the default"
            )),
        )
    })?;
    crate::limits::check_priority(&format!("job `{name}`"), chosen)?;
    Ok(Some(chosen))
}

/// A job whose tenant comes from its input is refused an input that names an empty tenant
/// (`X_JOB_TENANT_MISMATCH`): a job stored under `""` belongs to no tenant anyone can see.
fn tenant_given(entry: &JobEntry, input: &serde_json::Value) -> Result<(), Refusal> {
    let parsed = entry.parse(input, None);
    match parsed.tenant {
        Some(tenant) if tenant.trim().is_empty() => Err(Refusal(
            JobError::new(
                ErrorCode::JobTenantMismatch,
                format!(
                    "job `{}` takes its tenant from its input, and this input names an empty one",
                    entry.descriptor().name
                ),
            )
            .with_fix("fill in the field the job's tenant comes from with the tenant's name"),
        )),
        _ => Ok(()),
    }
}
