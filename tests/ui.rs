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
}
