#!/usr/bin/env bash
# A user's first hour, proven: a fresh crate outside this workspace, holding exactly the
# README's "Your own crate" files (each fenced block after an `<!-- own-crate: PATH -->` line,
# kept as written) and every other Rust block of the README
# and of the guides under docs/ as an example, except a block after `<!-- own-crate: skip (why) -->` (one that needs a feature
# the fresh crate does not turn on; the doc tests still compile it). It depends on `jobs-runtime`
# and `tokio` alone, resolved as a user's would be: no Cargo.lock of ours, no `[workspace]` table,
# the newest compatible versions of everything, and `jobs-runtime` (with `jobs-macros` and
# `jobs-grammar`) the packages exactly as `cargo package` builds them for crates.io, put in
# place of the registry's by a `[patch.crates-io]` in the crate's `.cargo/config.toml` (the
# user's Cargo.toml stays the README's). It must build, print its manifest,
# write and check its generated files, run its job on the embedded queue, and run each README
# example that needs no server.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
crate="$work/my-app"
mkdir -p "$crate/examples"

# Extract the blocks. Own-crate files go to their paths; other ```rust blocks become
# examples/readme_N.rs (no_run blocks are built, not run: they need a server).
awk -v crate="$crate" '
    /^<!-- own-crate: skip/ { skip = 1; next }
    /^<!-- own-crate: .* -->$/ { path = $3; next }
    /^```/ && !inside {
        inside = 1
        if (skip) { skip = 0; out = "" }
        else if (path != "") { out = crate "/" path; system("mkdir -p \"$(dirname " out ")\""); printf "" > out }
        else if ($0 ~ /^```rust/) {
            n++; out = crate "/examples/readme_" n ".rs"; printf "" > out
            if ($0 ~ /no_run/) print "readme_" n >> (crate "/no_run") ; else print "readme_" n >> (crate "/run")
        }
        else out = ""
        next
    }
    /^```$/ && inside { inside = 0; if (out != "") close(out); out = ""; path = ""; next }
    inside && out != "" { print > out }
' "$root/README.md" "$root"/docs/*.md
for file in Cargo.toml src/lib.rs src/main.rs src/bin/jobs.rs; do
    [[ -s "$crate/$file" ]] || { echo "error: the README has no own-crate block for $file" >&2; exit 1; }
done
grep -q '^jobs-runtime = { version = "0.1", features = \["cli"\] }$' "$crate/Cargo.toml" \
    || { echo "error: the README's Cargo.toml no longer names jobs-runtime as the script expects" >&2; exit 1; }
deps=$(sed -n '/^\[dependencies\]/,/^\[/p' "$crate/Cargo.toml" | grep -E '^[a-z_-]+ *=' | cut -d' ' -f1 | sort | tr '\n' ' ')
[[ "$deps" == "jobs-runtime tokio " ]] || { echo "error: the fresh crate depends on [$deps], not jobs-runtime and tokio alone" >&2; exit 1; }

# The published packages as crates.io would receive them, unpacked beside the crate.
(cd "$root" && cargo package -q -p jobs-grammar -p jobs-macros -p jobs-runtime --no-verify --allow-dirty)
mkdir -p "$work/packages" "$crate/.cargo"
printf '[patch.crates-io]\n' > "$crate/.cargo/config.toml"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml")
for package in jobs-grammar jobs-macros jobs-runtime; do
    tar -xzf "$root/target/package/$package-$version.crate" -C "$work/packages"
    printf '%s = { path = "%s" }\n' "$package" "$work/packages/$package-$version" >> "$crate/.cargo/config.toml"
done
if [[ -e "$crate/Cargo.lock" ]] || grep -q '^\[workspace\]' "$crate/Cargo.toml"; then
    echo "error: the fresh crate must have no lock and no [workspace] table a user would not have" >&2
    exit 1
fi

cd "$crate"
# Under the workspace's target directory, so a second run reuses its dependencies.
export CARGO_TARGET_DIR="$root/target/own-crate"
cargo generate-lockfile -q
# A warning in code the README tells users to paste is a defect: refuse it.
build_log=$(cargo build -q --all-targets 2>&1) || { echo "$build_log" >&2; exit 1; }
if grep -q '^warning' <<<"$build_log"; then
    echo "error: the README's code builds with warnings in a fresh crate:" >&2
    echo "$build_log" >&2
    exit 1
fi

manifest=$(cargo run -q --bin jobs -- manifest)
grep -q '"name": "send_welcome"' <<<"$manifest" \
    || { echo "error: the manifest does not list send_welcome:" >&2; echo "$manifest" >&2; exit 1; }
cargo run -q --bin jobs -- manifest --out generated
cargo run -q --bin jobs -- manifest --check generated
ran=$(cargo run -q)
grep -q '^job .* is done$' <<<"$ran" || { echo "error: the job did not run: $ran" >&2; exit 1; }
for example in $(cat run); do
    timeout 120 cargo run -q --example "$example" >/dev/null
done
# Another schemars major in the user's tree changes nothing: `#[input]` names jobs' own copy.
sed -i 's|^\[dependencies\]$|[dependencies]\nschemars = "0.8"|' Cargo.toml
cargo build -q --lib 2>&1 || { echo "error: schemars 0.8 in the tree broke #[input]" >&2; exit 1; }

echo "own crate: built with the packaged jobs-runtime and tokio alone, resolved afresh ($(grep -c "^name = " Cargo.lock) packages); manifest lists send_welcome; job done; $(wc -l <run) README examples ran, $(wc -l <no_run 2>/dev/null || echo 0) built; still builds beside schemars 0.8"
