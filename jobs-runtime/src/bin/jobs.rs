//! `jobs`: operate a jobs queue stored in Postgres (see [`jobs::cli`]).

fn main() -> std::process::ExitCode {
    jobs::cli::main()
}
