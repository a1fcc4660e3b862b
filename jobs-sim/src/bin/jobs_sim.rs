//! `jobs-sim`: run seeds in bulk, replay one with its trace, or soak for a while.
//!
//! ```text
//! jobs-sim run [--seeds N] [--from S]    N seeds from S (default 1000 from 0)
//! jobs-sim replay SEED [--trace]         one seed, twice; its report (and trace)
//! jobs-sim soak [--minutes M] [--from S] seeds from S until M minutes have passed
//! ```
//! Each takes `--plant NAME` to run with a bug planted in the store (`jobs_sim::PLANTS`), and
//! `--skew-ms MS` to let each process's clock drift that far from the simulation's (default
//! 1000; the workers allow for twice that between two clocks).
//! Exit 1 when any seed broke an invariant, each printed with the command that replays it.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use jobs_sim::{run, Scenario};

/// The scenario for `seed`, with the bug `--plant NAME` names planted.
fn scenario(args: &[String], seed: u64) -> Scenario {
    let mut scenario = Scenario::seed(seed);
    if let Some(ms) = flag(args, "--skew-ms") {
        scenario.skew = Duration::from_millis(ms);
    }
    if let Some(at) = args.iter().position(|a| a == "--plant") {
        let name = args.get(at + 1).map(String::as_str).unwrap_or("");
        scenario.planted = Some(jobs_sim::plant_named(name).unwrap_or_else(|| {
            let known: Vec<_> = jobs_sim::PLANTS.iter().map(|(n, _, _)| *n).collect();
            eprintln!("unknown --plant `{name}`; one of: {}", known.join(", "));
            std::process::exit(2)
        }));
    }
    scenario
}

fn flag(args: &[String], name: &str) -> Option<u64> {
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1).and_then(|v| v.parse().ok())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") => {
            let seeds = flag(&args, "--seeds").unwrap_or(1_000);
            let from = flag(&args, "--from").unwrap_or(0);
            seeds_until(&args, from, |done| done >= seeds)
        }
        Some("soak") => {
            let minutes = flag(&args, "--minutes").unwrap_or(60);
            let from = flag(&args, "--from").unwrap_or(0);
            let started = Instant::now();
            let budget = Duration::from_secs(minutes * 60);
            seeds_until(&args, from, move |_| started.elapsed() >= budget)
        }
        Some("replay") => {
            let Some(seed) = args.get(1).and_then(|s| s.parse().ok()) else {
                eprintln!("usage: jobs-sim replay SEED [--trace]");
                return ExitCode::from(2);
            };
            let mut scenario = scenario(&args, seed);
            scenario.keep_trace = args.iter().any(|a| a == "--trace");
            let first = run(&scenario);
            let second = run(&scenario);
            if scenario.keep_trace {
                for line in &first.trace {
                    println!("{line}");
                }
            }
            print!("{}", first.report());
            if first.trace_hash != second.trace_hash {
                eprintln!(
                    "NOT DETERMINISTIC: the second run's trace hashed {:016x}",
                    second.trace_hash
                );
                return ExitCode::FAILURE;
            }
            println!("  replayed: the second run's trace hashed the same");
            if first.violations.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        _ => {
            eprintln!("usage: jobs-sim run [--seeds N] [--from S] | replay SEED [--trace] | soak [--minutes M] [--from S]");
            ExitCode::from(2)
        }
    }
}

/// Runs seeds from `from` until `enough(seeds run)`, printing each failure; exit 1 on any.
fn seeds_until(args: &[String], from: u64, enough: impl Fn(u64) -> bool) -> ExitCode {
    let started = Instant::now();
    let mut failed = 0u64;
    let mut done = 0u64;
    while !enough(done) {
        let outcome = run(&scenario(args, from + done));
        if !outcome.violations.is_empty() {
            failed += 1;
            eprint!("{}", outcome.report());
        }
        done += 1;
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{done} seeds from {from}: {failed} failed, {secs:.1} s, {:.1} seeds/s",
        done as f64 / secs
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
