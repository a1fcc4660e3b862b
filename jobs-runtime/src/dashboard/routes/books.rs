//! The backfill ledger (each pass: status, pages, rows, cursor) and a ledger posting's lines.

use axum::extract::{Query, State};
use axum::Extension;
use serde::Deserialize;
use serde_json::json;

use super::{offered, page, Page};
use crate::dashboard::access::Ctx;
use crate::dashboard::Shared;
use crate::driver::backfill_store::BackfillListParams;
use crate::driver::ledger_book::PostingLinesParams;

/// `GET /backfills`: the declared backfills (their state in this environment, their rails)
/// and the latest passes (a tenant's dashboard: that tenant's).
pub(super) async fn backfills(State(dash): State<Shared>, Extension(ctx): Extension<Ctx>) -> Page {
    let passes = offered(
        dash.jobs
            .backfills()
            .list(BackfillListParams {
                limit: Some(100),
                ..Default::default()
            })
            .await,
    )?;
    let passes: Option<Vec<_>> = passes.map(|passes| {
        passes
            .into_iter()
            .filter(|p| dash.options.tenant.is_none() || p.tenant == dash.options.tenant)
            .collect()
    });
    let report = match passes {
        Some(_) => Some(dash.jobs.backfills().pending().await?),
        None => None,
    };
    let declared: Vec<_> = report
        .iter()
        .flat_map(|r| &r.rows)
        .map(|row| {
            let d = crate::backfill::registered_backfill(&row.name).map(|e| *e.descriptor());
            json!({
                "name": row.name,
                "state": row.state,
                "requires": d.and_then(|d| d.requires),
                "environments": d.map(|d| d.environments.join(", ")),
                "counts": d.is_some_and(|d| d.counts),
            })
        })
        .collect();
    page(
        &dash,
        &ctx,
        "backfills.html",
        None,
        json!({
            "passes": passes,
            "store": passes.is_some(),
            "declared": declared,
            "environment": report.and_then(|r| r.environment),
        }),
    )
}

/// The posting lookup's query.
#[derive(Debug, Default, Deserialize)]
pub(super) struct PostingQuery {
    ledger: Option<String>,
    key: Option<String>,
    tenant: Option<String>,
}

/// `GET /ledger?ledger=..&key=..`: the lines posted under a key.
pub(super) async fn ledger(
    State(dash): State<Shared>,
    Extension(ctx): Extension<Ctx>,
    Query(query): Query<PostingQuery>,
) -> Page {
    let book = dash.jobs.driver().ledger_book();
    let tenant = dash
        .options
        .tenant
        .clone()
        .or(query.tenant.clone().filter(|t| !t.is_empty()));
    let lines = match (book, &query.ledger, &query.key) {
        (Some(book), Some(ledger), Some(key)) if !ledger.is_empty() && !key.is_empty() => Some(
            book.posting_lines(&PostingLinesParams {
                ledger: ledger.clone(),
                tenant: tenant.clone(),
                key: key.clone(),
            })
            .await?,
        ),
        _ => None,
    };
    page(
        &dash,
        &ctx,
        "ledger.html",
        None,
        json!({
            "book": book.is_some(),
            "query": { "ledger": query.ledger, "key": query.key, "tenant": tenant },
            "lines": lines,
        }),
    )
}
