//! The queue a verb works on (`--database-url`, `--schema`) and who its changes are recorded
//! under (`--actor`): the global flags turned into a [`Jobs`] handle, apart from the verbs
//! that use it.

use std::sync::Arc;

use crate::client::Jobs;
use crate::error::{ErrorCode, JobError};

use super::args::Cli;

pub(super) async fn connect(cli: &Cli) -> Result<Jobs, JobError> {
    // An empty `--database-url ""` means none, whatever the environment holds.
    let url = cli
        .database_url
        .as_deref()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            JobError::new(
                ErrorCode::CliBadFlag,
                "no database: DATABASE_URL is not set",
            )
            .with_fix("set DATABASE_URL, or pass --database-url postgres://... or sqlite://...")
        })?;
    let driver = crate::driver::url::connect(url, cli.schema.as_deref()).await?;
    Ok(Jobs::with_clock(
        driver,
        Arc::new(crate::clock::SystemClock),
    ))
}

/// The actor the queue verbs act as: `--actor`, or `cli:` and the login name.
pub(super) fn actor(cli: &Cli) -> String {
    cli.actor.clone().unwrap_or_else(|| {
        let user = ["USER", "LOGNAME", "USERNAME"]
            .iter()
            .find_map(|name| std::env::var(name).ok().filter(|u| !u.is_empty()));
        format!("cli:{}", user.as_deref().unwrap_or("unknown"))
    })
}
