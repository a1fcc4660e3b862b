#!/usr/bin/env bash
# Runs the held-snapshot scenario (examples/held_snapshot.rs) on a PostgreSQL cluster of its own,
# configured as production runs one: autovacuum on (a shared development server often runs
# without it, and then no phase of the scenario is ever vacuumed), fsync and synchronous commit
# on, everything else at initdb's defaults. The cluster lives in a temp folder, listens on a free
# loopback port, and is stopped and removed on exit. Variables are passed through to the example
# (BASELINE_SECONDS, HELD_SECONDS, AFTER_SECONDS); PG_BIN names the server's bin folder (default:
# the newest /usr/lib/postgresql/*/bin).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}"
[[ -x "$bin/initdb" ]] || { echo "error: no initdb in $bin (set PG_BIN)" >&2; exit 2; }

data="$(mktemp -d /tmp/held-snapshot-pg.XXXXXX)"
# initdb refuses root: as root the cluster belongs to the `postgres` user.
as_owner=()
if [[ "$(id -u)" == 0 ]]; then
    chown postgres: "$data"
    as_owner=(runuser -u postgres --)
fi
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
stop() {
    "${as_owner[@]}" "$bin/pg_ctl" -D "$data/db" -m fast stop >/dev/null 2>&1 || true
    rm -rf "$data"
}
trap stop EXIT

"${as_owner[@]}" "$bin/initdb" -D "$data/db" -U postgres --auth=trust >/dev/null
"${as_owner[@]}" "$bin/pg_ctl" -D "$data/db" -l "$data/server.log" -w start \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$data -c autovacuum=on" >/dev/null
echo "cluster on 127.0.0.1:$port, autovacuum $("$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -Atc 'show autovacuum')" >&2

cd "$root"
DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres" \
    cargo run --release -p jobs-examples --example held_snapshot
