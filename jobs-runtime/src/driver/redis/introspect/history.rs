//! Each job's history: the rows `lib.lua`'s `history` appends (JSON in the list `Q:h:<id>`, at
//! most 200 a job, in the act's own script), read newest first. A removed job's rows stay until
//! the purge takes them (`lua/purge.lua`).

use serde::Deserialize;

use super::super::codec::time;
use super::super::scripts;
use super::super::RedisDriver;
use crate::driver::introspect::*;
use crate::driver::Operation as Op;
use crate::error::JobError;

/// One stored row, as `history` encodes it.
#[derive(Debug, Deserialize)]
struct Stored {
    at: String,
    verb: String,
    #[serde(default)]
    actor: Option<String>,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    tenant: Option<String>,
}

/// The page of `params.id`'s history an operator reads, newest first by `(at, insertion)`.
pub(super) async fn list(
    driver: &RedisDriver,
    params: &JobHistoryParams,
) -> Result<Vec<JobHistoryEntry>, JobError> {
    const OP: Op = Op::IntrospectJobHistory;
    let limit = check_history(params)?;
    let Some(queue) = driver.queue_of(OP, &params.id).await? else {
        return Ok(Vec::new());
    };
    let mut invocation = scripts::on_queue(&scripts::INTROSPECT_VERBS, driver.keys(), &queue);
    invocation.arg("history").arg(params.id.to_string());
    let stored: Vec<String> = driver.conn().script(OP, &invocation).await?;
    let mut rows = Vec::with_capacity(stored.len());
    // Oldest first as stored: the position is the insertion order ties on `at` read by.
    for (seq, json) in stored.iter().enumerate() {
        let row: Stored =
            serde_json::from_str(json).map_err(|_| super::super::enqueue::malformed())?;
        if params
            .tenant_id
            .as_ref()
            .is_some_and(|t| row.tenant.as_ref() != Some(t))
        {
            continue;
        }
        let entry = JobHistoryEntry {
            job_id: params.id,
            at: time(&row.at)?,
            actor: row.actor,
            verb: row.verb,
            detail: row.detail,
        };
        rows.push((seq, entry));
    }
    rows.sort_by_key(|(seq, entry)| std::cmp::Reverse((entry.at, *seq)));
    Ok(rows
        .into_iter()
        .take(limit as usize)
        .map(|(_, entry)| entry)
        .collect())
}
