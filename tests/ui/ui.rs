//! Compile-time refusals of the attribute macros, one rule per file (`tests/ui/<macro>/fail/`);
//! the declarations that must compile (`tests/ui/<macro>/pass/`) are `pass.rs`.
//!
//! A package of its own (`jobs-ui-tests`, this folder): trybuild builds its cases in a project
//! with every dev-dependency of the package they belong to, and the integration tests' package
//! brings a browser driver, HTTP clients, proptest and the examples; this one brings only what
//! the cases use.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("job/fail/*.rs");
    t.compile_fail("task/fail/*.rs");
    t.compile_fail("backfill/fail/*.rs");
    t.compile_fail("ledger/fail/*.rs");
    t.compile_fail("webhook/fail/*.rs");
    t.compile_fail("purge/fail/*.rs");
    t.compile_fail("partitions/fail/*.rs");
    t.compile_fail("consumer/fail/*.rs");
    t.compile_fail("input/fail/*.rs");
}

/// Every refusal worded by the macros carries its code (`(X_...)`); the only errors without
/// one are rustc's own (`error[E0609]`: a template field the input lacks, a type mismatch),
/// which a macro cannot reword.
#[test]
fn every_macro_refusal_names_its_code() {
    let mut checked = 0;
    for kind in [
        "job",
        "task",
        "backfill",
        "ledger",
        "webhook",
        "purge",
        "partitions",
        "input",
    ] {
        let dir = format!("{kind}/fail");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "stderr") {
                continue;
            }
            let stderr = std::fs::read_to_string(&path).unwrap();
            for line in stderr.lines().filter(|l| l.starts_with("error: ")) {
                assert!(
                    line.contains("(X_"),
                    "{}: a macro refusal without its code: {line}",
                    path.display()
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "only {checked} refusals read");
}
