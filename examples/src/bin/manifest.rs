//! `cargo run --bin manifest` prints the manifest of the example jobs;
//! `cargo run --bin manifest -- --out examples/generated` writes every codegen output;
//! `cargo run --bin manifest -- --check examples/generated` (or `--check examples/manifest.json`)
//! fails when a committed copy is stale.

// Link the example jobs so their registrations are in this binary.
use jobs_examples as _;

fn main() -> std::process::ExitCode {
    jobs_codegen::manifest_main(std::env::args().skip(1))
}
