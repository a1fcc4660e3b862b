//! `jobs dashboard`: the standalone web dashboard, its credentials read from the environment,
//! with the outbox panel when there is an outbox to show.

use std::io::Write;

use crate::client::Jobs;
use crate::error::{ErrorCode, JobError};
use crate::outbox::OutboxMode;

use crate::cli::args::{Cli, DashboardArgs};
use crate::cli::connect::connect;
use crate::cli::outbox_store;

/// `jobs dashboard`: the web dashboard over the queue, until the process is stopped.
pub(in crate::cli) async fn dashboard(
    cli: &Cli,
    args: DashboardArgs,
    out: &mut dyn Write,
) -> Result<(), JobError> {
    use crate::dashboard::standalone::{check_listen, serve, Credentials};
    let credentials = Credentials::from_env();
    // Refused before any connection: nothing is opened for a dashboard that would not start.
    check_listen(args.listen, &credentials)?;
    let jobs = with_outbox(cli, connect(cli).await?).await?;
    let options = crate::dashboard::DashboardOptions {
        tenant: args.tenant,
        ..Default::default()
    };
    serve(jobs, args.listen, options, credentials, |bound| {
        let _ = writeln!(out, "dashboard on http://{bound}/");
        let _ = out.flush();
    })
    .await
}

/// `jobs` with the outbox the overview shows: the one at `--outbox-url` (which must hold
/// `x_outbox`: refused otherwise, before the dashboard starts), else the job store's own when
/// its database holds `x_outbox` (a Postgres or SQLite store the migrations reached). A job
/// store without one (memory, Redis, a database not migrated that far) shows no panel.
async fn with_outbox(cli: &Cli, jobs: Jobs) -> Result<Jobs, JobError> {
    let given = cli.outbox_url.as_deref().is_some_and(|u| !u.is_empty());
    let outbox = match outbox_store::open(cli).await {
        Ok(outbox) => outbox,
        Err(error) if !given && error.is(ErrorCode::CliBadFlag) => return Ok(jobs),
        Err(error) => return Err(error),
    };
    match outbox.stats().await {
        Ok(_) => Ok(jobs.with_shared_outbox(outbox.store, OutboxMode::Optional)),
        Err(error) if !given && error.is(ErrorCode::DriverSchemaMissing) => Ok(jobs),
        Err(error) => Err(error),
    }
}
