//! `jobs migrate`: applies the embedded migrations to the store.

use serde_json::json;

use crate::client::Jobs;
use crate::error::JobError;

use crate::cli::output::to_json;

/// Applies the migrations; `schema` is `--schema`, named in the answer for Postgres.
pub(in crate::cli) async fn migrate(
    jobs: &Jobs,
    schema: &str,
    json: bool,
) -> Result<String, JobError> {
    let applied = jobs.driver().migrate().await?;
    // Only Postgres has schemas; a SQLite file is the store itself.
    let store = match jobs.driver().name() {
        "postgres" => format!("schema `{schema}`"),
        other => format!("the {other} store"),
    };
    Ok(if json {
        to_json(&json!({ "schema": schema, "applied": applied }))
    } else if applied.is_empty() {
        format!("{store} is up to date\n")
    } else {
        let list: Vec<String> = applied.iter().map(|v| format!("{v:04}")).collect();
        format!("{store}: applied {}\n", list.join(", "))
    })
}
