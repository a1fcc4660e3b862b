//! `cargo run --example sqlite_durable` proves what it says: it kills its worker with SIGKILL
//! during a durable sleep, starts another, and exits 0 only when the job finished with each
//! step run once. `cargo test` builds the examples beside this test's own binary.

use std::path::PathBuf;
use std::process::Command;

fn example(name: &str) -> PathBuf {
    // target/<profile>/deps/<this test> -> target/<profile>/examples/<name>
    let exe = std::env::current_exe().expect("own path");
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test runs from target/<profile>/deps");
    profile.join("examples").join(name)
}

#[test]
fn a_worker_killed_mid_run_leaves_a_job_the_next_one_finishes_without_rerunning_a_step() {
    let dir = std::env::temp_dir().join(format!("jobs-example-durable-{}", std::process::id()));
    let output = Command::new(example("sqlite_durable"))
        .arg(&dir)
        .output()
        .expect("the example runs (cargo test builds it)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("worker killed with SIGKILL"), "{stdout}");
    assert!(
        stdout.contains("steps run, in order: charge, receipt"),
        "{stdout}"
    );
}
