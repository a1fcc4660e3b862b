//! `jobs backfills` (the ledger of passes, or declared vs run with `--pending`) and `jobs
//! backfill <name>` (a dry run, or the pass enqueued with `--write`).

use serde_json::json;

use crate::client::Jobs;
use crate::error::{ErrorCode, JobError};

use crate::cli::args::{BackfillArgs, BackfillsArgs};
use crate::cli::output::to_json;
use crate::cli::render::{table, time};

pub(in crate::cli) async fn backfills(
    jobs: &Jobs,
    args: BackfillsArgs,
    json: bool,
) -> Result<String, JobError> {
    if args.all {
        return all(jobs, args.write, json).await;
    }
    if args.pending {
        let report = jobs.backfills().pending().await?;
        let text = if json {
            to_json(&report)
        } else {
            let rows: Vec<Vec<String>> = report
                .rows
                .iter()
                .map(|r| vec![r.name.clone(), format!("{:?}", r.state).to_lowercase()])
                .collect();
            let mut text = table(&["BACKFILL", "STATE"], &rows);
            for name in &report.orphaned {
                text.push_str(&format!(
                    "orphaned: `{name}` ran but is no longer declared\n"
                ));
            }
            text
        };
        // The report is printed either way; the exit code says whether anything is pending.
        return match report.check() {
            Ok(()) => Ok(text),
            Err(pending) => Err(pending.with_fix(text)),
        };
    }
    let status = args
        .status
        .as_deref()
        .map(|s| {
            crate::driver::backfill_store::PassStatus::parse(s).map_err(|_| {
                JobError::new(
                    ErrorCode::CliBadFlag,
                    format!("`--status {s}` is not a pass status"),
                )
                .with_fix("use running, completed or failed")
            })
        })
        .transpose()?;
    let passes = jobs
        .backfills()
        .list(crate::driver::backfill_store::BackfillListParams {
            name: args.name,
            status,
            limit: args.limit,
            ..Default::default()
        })
        .await?;
    if json {
        return Ok(to_json(&passes));
    }
    let rows: Vec<Vec<String>> = passes
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                p.tenant.clone().unwrap_or_else(|| "-".into()),
                p.status.as_str().to_string(),
                p.batches.to_string(),
                p.rows.to_string(),
                time(p.started_at),
                p.finished_at.map(time).unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    Ok(table(
        &[
            "BACKFILL", "TENANT", "STATUS", "PAGES", "ROWS", "STARTED", "FINISHED",
        ],
        &rows,
    ))
}

/// `--all`: every pending backfill through the gate; with `--write`, each enqueued.
async fn all(jobs: &Jobs, write: bool, json: bool) -> Result<String, JobError> {
    let backfills = jobs.backfills();
    let mut rows = Vec::new();
    let mut refused = 0usize;
    if write {
        for tried in backfills.enqueue_pending().await? {
            let (outcome, code, job) = match &tried.outcome {
                Ok(queued) => ("enqueued", None, Some(queued.id)),
                Err(e) => ("refused", e.code().map(|c| c.as_str()), None),
            };
            refused += usize::from(tried.outcome.is_err());
            rows.push(json!({ "name": tried.name, "outcome": outcome, "code": code, "job": job }));
        }
    } else {
        for name in backfills.pending().await?.pending {
            let gate = backfills
                .gate(&name, &crate::backfill::BackfillRequest::new())
                .await;
            let code = gate
                .as_ref()
                .err()
                .and_then(|e| e.code())
                .map(|c| c.as_str());
            let outcome = if gate.is_ok() {
                "would enqueue"
            } else {
                "would refuse"
            };
            rows.push(json!({ "name": name, "outcome": outcome, "code": code, "job": null }));
        }
    }
    let text = if json {
        to_json(&rows)
    } else {
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                let cell = |k: &str| r[k].as_str().map_or("-".to_string(), str::to_string);
                vec![cell("name"), cell("outcome"), cell("code"), cell("job")]
            })
            .collect();
        let mut text = table(&["BACKFILL", "OUTCOME", "CODE", "JOB"], &cells);
        if !write {
            text.push_str("dry run: pass --write to enqueue them\n");
        }
        text
    };
    if refused > 0 {
        return Err(JobError::new(
            ErrorCode::BackfillPending,
            format!("{refused} pending backfill(s) were refused by the gate"),
        )
        .with_fix(text));
    }
    Ok(text)
}

pub(in crate::cli) async fn backfill(
    jobs: &Jobs,
    args: BackfillArgs,
    json: bool,
) -> Result<String, JobError> {
    let mut request = match &args.tenant {
        Some(tenant) => crate::backfill::BackfillRequest::tenant(tenant.clone()),
        None => crate::backfill::BackfillRequest::new(),
    };
    if args.force {
        request = request.forced();
    }
    if !args.write {
        let passes = jobs
            .backfills()
            .list(crate::driver::backfill_store::BackfillListParams {
                name: Some(args.name.clone()),
                limit: Some(1),
                ..Default::default()
            })
            .await?;
        let last = passes
            .first()
            .map(|p| p.status.as_str())
            .unwrap_or("never run");
        // The gate, as --write would meet it: unknown, environment, migration, applied.
        let gate = jobs.backfills().gate(&args.name, &request).await;
        let refused = gate
            .as_ref()
            .err()
            .and_then(|e| e.code())
            .map(|c| c.as_str());
        let verdict = match &gate {
            Ok(_) => "pass --write to enqueue it".to_string(),
            Err(e) => format!("--write would be refused: {e}"),
        };
        let plan = format!(
            "dry run: backfill `{}` (last pass: {last}); {verdict}{}\n",
            args.name,
            if args.force { " (forced)" } else { "" }
        );
        return Ok(if json {
            to_json(&json!({
                "name": args.name,
                "dry_run": true,
                "last_pass": last,
                "refused": refused,
            }))
        } else {
            plan
        });
    }
    let queued = jobs.backfills().enqueue(&args.name, request).await?;
    Ok(if json {
        to_json(&queued)
    } else {
        format!("enqueued backfill `{}`: job {}\n", args.name, queued.id)
    })
}
