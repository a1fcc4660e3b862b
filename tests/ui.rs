//! Compile-time refusals of the attribute macros, one rule per file (`tests/ui/<macro>/fail/`),
//! and declarations that must compile (`tests/ui/<macro>/pass/`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/job/pass/*.rs");
    t.compile_fail("tests/ui/job/fail/*.rs");
    t.pass("tests/ui/task/pass/*.rs");
    t.compile_fail("tests/ui/task/fail/*.rs");
    t.pass("tests/ui/backfill/pass/*.rs");
    t.compile_fail("tests/ui/backfill/fail/*.rs");
    t.pass("tests/ui/ledger/pass/*.rs");
    t.compile_fail("tests/ui/ledger/fail/*.rs");
    t.pass("tests/ui/webhook/pass/*.rs");
    t.compile_fail("tests/ui/webhook/fail/*.rs");
    t.pass("tests/ui/purge/pass/*.rs");
    t.compile_fail("tests/ui/purge/fail/*.rs");
    t.compile_fail("tests/ui/input/fail/*.rs");
}

/// Every refusal worded by the macros carries its code (`(X_...)`); the only errors without
/// one are rustc's own (`error[E0609]`: a template field the input lacks, a type mismatch),
/// which a macro cannot reword.
#[test]
fn every_macro_refusal_names_its_code() {
    let mut checked = 0;
    for kind in [
        "job", "task", "backfill", "ledger", "webhook", "purge", "input",
    ] {
        let dir = format!("tests/ui/{kind}/fail");
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
