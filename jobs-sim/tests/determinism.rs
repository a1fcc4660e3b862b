//! The runtime's sources keep a simulated run a function of its seed: every `select!` is
//! `biased` (tokio's unbiased one starts from a thread-random branch), and no id or random draw
//! is made but through `entropy.rs`. The parts the simulator never runs are left out: the SQL
//! and Redis drivers, the dashboard, the conformance suite, and `#[cfg(test)]` code.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("a readable source tree")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

const LEFT_OUT: [&str; 7] = [
    "driver/postgres/",
    "driver/sqlite/",
    "driver/redis/",
    "dashboard/",
    "conformance/",
    "entropy.rs",
    "simulation.rs",
];

const NONDETERMINISTIC: [&str; 4] = [
    "Uuid::now_v7",
    "Uuid::new_v4",
    "rand::rng()",
    "rand::random",
];

#[test]
fn runtime_sources_keep_a_simulated_run_a_function_of_its_seed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../jobs-runtime/src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut found = Vec::new();
    for file in files {
        let name = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if LEFT_OUT.iter().any(|left| name.starts_with(left)) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        // Test modules sit at the end of a file.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let lines: Vec<&str> = code.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            if line.contains("select! {") && lines.get(i + 1).is_none_or(|l| l.trim() != "biased;")
            {
                found.push(format!("{name}:{}: a select! that is not biased", i + 1));
            }
            for call in NONDETERMINISTIC {
                if line.contains(call) {
                    found.push(format!("{name}:{}: `{call}` outside entropy.rs", i + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
