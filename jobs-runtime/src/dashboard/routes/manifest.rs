//! The manifest: every job linked into the binary with its input schema, and an enqueue form
//! built from that schema. The browser checks the form against the schema's types before it is
//! sent; the job's own input type checks it again before anything is written.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::Extension;
use serde_json::json;

use super::{audit, back, page, Page};
use crate::dashboard::access::{may_act, Ctx};
use crate::dashboard::error::Refusal;
use crate::dashboard::{schema_form, Shared};
use crate::enqueue::EnqueueOptions;
use crate::error::{ErrorCode, JobError};
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
    page(
        dash,
        ctx,
        "enqueue.html",
        None,
        json!({ "name": d.name, "queue": d.queue, "input_type": d.input_type, "schema": schema, "fields": fields }),
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
    let queued = dash
        .jobs
        .acting_as(ctx.identity.clone())
        .enqueue_json(entry, &input, EnqueueOptions::default())
        .await?;
    audit(&ctx, "enqueue", &queued.id.to_string());
    let note = if queued.deduped {
        "deduped"
    } else {
        "enqueued"
    };
    Ok(back(&ctx, &format!("/jobs/{}", queued.id), note))
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
