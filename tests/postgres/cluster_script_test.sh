#!/usr/bin/env bash
# scripts/pg-test-cluster.sh, run twice on one directory as two `ctest -L postgres` runs in one
# build tree would: while the first run lives, the second one's start is refused with a message
# naming the first, and neither that start nor the second run's stop touches the first run's
# server; once the first run is gone, its cluster is stale and the next start replaces it.
#
#   cluster_script_test.sh SCRIPT   (FACTUM_PG_BINDIR: the server programs, as for the script)
set -euo pipefail
script=$1
bindir=${FACTUM_PG_BINDIR:?FACTUM_PG_BINDIR names the PostgreSQL server programs}
work=$(mktemp -d)
dir=$work/cluster
owner_pid=
cleanup() {
  [[ -z "$owner_pid" ]] || kill "$owner_pid" 2>/dev/null || true
  FACTUM_PG_TAKE_OVER=1 bash "$script" stop "$dir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAILED: $*" >&2
  exit 1
}
port_of() { sed -E 's#.*:([0-9]+)/.*#\1#' "$dir/uri"; }
answers() { "$bindir/pg_isready" -q -h 127.0.0.1 -p "$1"; }

# Run 1: started by a process that stays alive afterwards (it becomes a sleep), as ctest does
# while its tests run.
bash -c 'bash "$0" start "$1" >"$2" 2>&1; exec sleep 600' "$script" "$dir" "$work/run1.log" &
owner_pid=$!
for _ in $(seq 1 600); do
  [[ -s "$dir/uri" ]] && break
  sleep 0.2
done
[[ -s "$dir/uri" ]] || fail "the first run's server did not start: $(cat "$work/run1.log")"
port=$(port_of)
answers "$port" || fail "the first run's server does not answer on port $port"

# Run 2, from another process: its start is refused, naming the first run.
if bash "$script" start "$dir" >"$work/run2.log" 2>&1; then
  fail "a second run's start was not refused: $(cat "$work/run2.log")"
fi
grep -q "in use by another run, process $owner_pid" "$work/run2.log" ||
  fail "the refusal does not name the first run (process $owner_pid): $(cat "$work/run2.log")"
answers "$port" || fail "the refused start stopped the first run's server"
[[ "$(port_of)" == "$port" ]] || fail "the refused start replaced the first run's URI"

# Run 2's cleanup: its stop leaves the first run's server running.
bash "$script" stop "$dir" >"$work/stop2.log" 2>&1 || fail "stop failed: $(cat "$work/stop2.log")"
grep -q "left running" "$work/stop2.log" || fail "stop did not say why: $(cat "$work/stop2.log")"
answers "$port" || fail "the second run's stop stopped the first run's server"

# Run 1 ends without stopping its server (a killed ctest): the next start replaces it.
kill "$owner_pid"
wait "$owner_pid" 2>/dev/null || true
owner_pid=
bash "$script" start "$dir" >"$work/run3.log" 2>&1 || fail "start after a stale run: $(cat "$work/run3.log")"
grep -q "stopping a previous run's cluster" "$work/run3.log" ||
  fail "the stale cluster was not stopped: $(cat "$work/run3.log")"
answers "$(port_of)" || fail "the new server does not answer"
bash "$script" stop "$dir" >/dev/null || fail "the owner's stop failed"
[[ ! -e "$dir/uri" && ! -e "$dir/owner" ]] || fail "stop left the cluster's uri or owner behind"
echo "ok"
