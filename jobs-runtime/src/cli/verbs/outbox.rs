//! `jobs outbox`: the transactional outbox's figures (backlog, the oldest staged row's age,
//! failing rows and the last error code, refused rows, published rows kept, the relay holding
//! the lease and its last claim), read beside the jobs or at `--outbox-url`.

use serde_json::json;

use crate::clock::{Clock, SystemClock};
use crate::driver::outbox::DEFAULT_OUTBOX_CLAIM_LEASE;
use crate::error::JobError;

use crate::cli::args::Cli;
use crate::cli::outbox_store;
use crate::cli::output::to_json;
use crate::cli::render::{ago, time};

pub(in crate::cli) async fn outbox(cli: &Cli) -> Result<String, JobError> {
    let outbox = outbox_store::open(cli).await?;
    let stats = outbox.stats().await?;
    let now = SystemClock.now();
    let store = outbox.store.name();
    if cli.json {
        return Ok(to_json(&json!({
            "store": store,
            "schema": outbox.schema,
            "source": if outbox.beside_jobs { "database-url" } else { "outbox-url" },
            "backlog": stats.backlog,
            "oldest_staged_at": stats.oldest_staged_at,
            "oldest_staged_seconds": crate::telemetry::oldest_staged_seconds(&stats, now),
            "failing": stats.failing,
            "last_error_code": stats.last_error_code,
            "refused": stats.refused,
            "published": stats.published,
            "lease": stats.lease.as_ref().map(|lease| json!({
                "holder": lease.holder,
                "claimed_at": lease.claimed_at,
                "claim_seconds": crate::telemetry::lease_claim_seconds(lease, now),
            })),
        })));
    }
    let mut text = String::new();
    let mut field = |k: &str, v: String| text.push_str(&format!("{k:<15}{v}\n"));
    let place = if outbox.beside_jobs {
        "beside the jobs"
    } else {
        "at --outbox-url"
    };
    field(
        "outbox",
        match &outbox.schema {
            Some(schema) => format!("{store}, schema `{schema}`, {place}"),
            None => format!("{store}, {place}"),
        },
    );
    field("backlog", stats.backlog.to_string());
    field(
        "oldest staged",
        stats
            .oldest_staged_at
            .map_or("-".into(), |at| format!("{} ({})", time(at), ago(at, now))),
    );
    field(
        "failing",
        match &stats.last_error_code {
            Some(code) => format!("{} (last error {code})", stats.failing),
            None => stats.failing.to_string(),
        },
    );
    field("refused", stats.refused.to_string());
    field(
        "published",
        format!("{} (kept until the outbox purge)", stats.published),
    );
    field(
        "relay",
        stats
            .lease
            .as_ref()
            .map_or("- (no relay holds the lease)".into(), |lease| {
                let lapsed = if crate::telemetry::lease_claim_seconds(lease, now)
                    > DEFAULT_OUTBOX_CLAIM_LEASE.as_secs_f64()
                {
                    format!(
                        ", past the default {} s lease",
                        DEFAULT_OUTBOX_CLAIM_LEASE.as_secs()
                    )
                } else {
                    String::new()
                };
                format!(
                    "{} (last claim {}, {}{lapsed})",
                    lease.holder,
                    time(lease.claimed_at),
                    ago(lease.claimed_at, now)
                )
            }),
    );
    Ok(text)
}
