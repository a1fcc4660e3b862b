//! The simulator in CI: a thousand seeds a run with no invariant broken, a seed that replays to
//! the same trace, and every planted bug caught by the invariant that exists for it.
//!
//! The seeds start at `SIM_SEEDS_FROM` when set, else at a base drawn from the time, printed
//! first: each CI run explores seeds no earlier run tried, and a failure names its seed and the
//! one command that replays it (`cargo run -p jobs-sim -- replay <seed>`). `SIM_SEEDS` sets how
//! many (default 1,000, split over two tests so both cores run them).

use std::time::Instant;

use jobs_sim::{run, Scenario, PLANTS};

fn seeds() -> u64 {
    std::env::var("SIM_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

fn base() -> u64 {
    std::env::var("SIM_SEEDS_FROM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            // Whole thousands, so two runs' ranges are told apart at a glance.
            (secs % 1_000_000) * 1_000
        })
}

/// Runs `count` seeds from `from`; fails naming every seed that broke an invariant.
fn sweep(from: u64, count: u64) {
    let started = Instant::now();
    let mut failures = String::new();
    for seed in from..from + count {
        let outcome = run(&Scenario::seed(seed));
        if !outcome.violations.is_empty() {
            failures.push_str(&outcome.report());
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "seeds {from}..{}: {:.1} seeds/s ({secs:.1} s)",
        from + count,
        count as f64 / secs
    );
    assert!(failures.is_empty(), "seeds broke invariants:\n{failures}");
}

#[test]
fn the_first_half_of_the_seeds_breaks_no_invariant() {
    let (from, count) = (base(), seeds());
    println!("SIM_SEEDS_FROM={from} SIM_SEEDS={count}");
    sweep(from, count / 2);
}

#[test]
fn the_second_half_of_the_seeds_breaks_no_invariant() {
    let (from, count) = (base(), seeds());
    sweep(from + count / 2, count - count / 2);
}

#[test]
fn a_seed_replays_to_the_same_trace() {
    for seed in [base(), 7] {
        let mut scenario = Scenario::seed(seed);
        scenario.keep_trace = true;
        let first = run(&scenario);
        let second = run(&scenario);
        assert!(
            first.trace.len() > 100,
            "a run does something: {}",
            first.report()
        );
        assert_eq!(first.trace_hash, second.trace_hash, "seed {seed}");
        assert_eq!(first.trace, second.trace, "seed {seed}");
        assert_eq!(first.stats, second.stats, "seed {seed}");
    }
}

#[test]
fn different_seeds_make_different_runs() {
    let a = run(&Scenario::seed(1));
    let b = run(&Scenario::seed(2));
    assert_ne!(a.trace_hash, b.trace_hash);
}

/// How many seeds a planted bug may take to be found: the CI budget for each.
const SEEDS_TO_FIND_A_PLANTED_BUG: u64 = 60;

#[test]
fn every_planted_bug_is_caught_by_its_invariant() {
    let mut missed = Vec::new();
    for (name, bug, invariant) in PLANTS {
        let found = (0..SEEDS_TO_FIND_A_PLANTED_BUG).find(|&seed| {
            let mut scenario = Scenario::seed(seed);
            scenario.planted = Some(bug);
            run(&scenario)
                .violations
                .iter()
                .any(|v| v.invariant == invariant)
        });
        match found {
            Some(seed) => println!("{name}: caught as {invariant} at seed {seed}"),
            None => missed.push(name),
        }
    }
    assert!(
        missed.is_empty(),
        "planted bugs not caught within {SEEDS_TO_FIND_A_PLANTED_BUG} seeds: {missed:?}"
    );
}

#[test]
fn a_run_does_what_it_is_for() {
    // Seed 7's run, in numbers: faults of every kind, crashes, freezes, jumps, and every
    // accepted job settled.
    let outcome = run(&Scenario::seed(7));
    let s = &outcome.stats;
    assert!(outcome.violations.is_empty(), "{}", outcome.report());
    assert!(s.accepted >= 20, "{}", outcome.report());
    assert!(
        s.delayed > 0 && s.failed_before > 0 && s.failed_after > 0 && s.reply_delayed > 0,
        "{}",
        outcome.report()
    );
    assert!(s.crashes > 0 && s.freezes > 0, "{}", outcome.report());
}
