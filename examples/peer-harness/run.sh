#!/usr/bin/env bash
# Runs the peer harness (../shared/bench-peers, kept beside this repository) against this
# checkout. The harness names this project's package `jobs`, its name before it became
# `jobs-runtime` (the name `jobs` on crates.io is another project's); this copies the harness,
# points its dependency at the renamed package, and runs it with every argument and variable
# passed through (PEERS, MODES, REPS, ...; SCRIPT=run-redis.sh for the Redis variant). Results land where the harness puts them,
# target/bench-peers/results/<run>/; `cargo run --bin bench-chart -- --from-harness
# <that folder>/results.jsonl` takes them into docs/benchmarks/.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
harness="${HARNESS:-$root/../shared/bench-peers}"
[[ -f "$harness/run.sh" ]] || { echo "error: no peer harness at $harness (set HARNESS)" >&2; exit 2; }
copy="$(mktemp -d)"
trap 'rm -rf "$copy"' EXIT
cp -r "$harness"/. "$copy"/
chmod -R u+w "$copy"
# The Redis peer (SCRIPT=run-redis.sh) opens redis:// URLs: the driver is behind feature `redis`.
sed -i 's|^jobs = { path = "project/jobs-runtime" }|jobs = { path = "project/jobs-runtime", package = "jobs-runtime", features = ["redis"] }|' "$copy/Cargo.toml"
grep -q 'package = "jobs-runtime"' "$copy/Cargo.toml" \
    || { echo "error: the harness's dependency line changed; update this script" >&2; exit 2; }
cd "$root"
PROJECT="$root" bash "$copy/${SCRIPT:-run.sh}" "$@"
