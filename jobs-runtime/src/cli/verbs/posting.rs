//! `jobs posting <ledger> <key>`: the lines a `#[ledger]` posted under a key.

use crate::client::Jobs;
use crate::error::{ErrorCode, JobError};

use crate::cli::args::PostingArgs;
use crate::cli::output::to_json;
use crate::cli::render::table;

pub(in crate::cli) async fn posting(
    jobs: &Jobs,
    args: PostingArgs,
    json: bool,
) -> Result<String, JobError> {
    let book = jobs.driver().ledger_book().ok_or_else(|| {
        JobError::new(ErrorCode::NotImplemented, "this driver has no ledger book")
    })?;
    let lines = book
        .posting_lines(&crate::driver::ledger_book::PostingLinesParams {
            ledger: args.ledger.clone(),
            tenant: args.tenant.clone(),
            key: args.key.clone(),
        })
        .await?;
    if lines.is_empty() {
        return Err(JobError::new(
            ErrorCode::JobNotFound,
            format!("ledger `{}` holds no posting under that key", args.ledger),
        )
        .with_fix("check the ledger name, the key and --tenant"));
    }
    if json {
        return Ok(to_json(&lines));
    }
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|l| {
            vec![
                l.line.to_string(),
                l.account.clone(),
                l.minor.to_string(),
                l.currency.clone(),
            ]
        })
        .collect();
    Ok(table(&["LINE", "ACCOUNT", "MINOR", "CURRENCY"], &rows))
}
