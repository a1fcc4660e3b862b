//! `jobs dashboard`: the standalone web dashboard, its credentials read from the environment.

use std::io::Write;

use crate::error::JobError;

use crate::cli::args::{Cli, DashboardArgs};
use crate::cli::connect::connect;

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
    let jobs = connect(cli).await?;
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
