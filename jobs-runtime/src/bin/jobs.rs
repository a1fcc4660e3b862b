//! `jobs`: operate a jobs queue stored in Postgres (see [`jobs::cli`]).

use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    ExitCode::from(jobs::cli::run(std::env::args_os(), &mut out, &mut err).await)
}
