#!/usr/bin/env bash
# Side-by-side: two peer PostgreSQL event stores on factum's benchmark workload (issue 33).
#   bench/peers/run.sh --pg-uri URI [--factum BIN] [--events N] [--runs N] [--json]
# Installs the peers from npm into a cache dir (not the repo), and measures each case on a
# fresh database of the server at URI (its user must be able to create databases and, for
# Message DB, the role message_store). With --factum (build/bench/peer_workload), factum is
# measured in the same rounds, in turns with the peers: on a fresh database of the same server,
# on a new SQLite file (durability full), and with 16 connections over 4 processes. See
# README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
uri="" factum="" events=100000 runs=3 json=0
while (($#)); do
  case $1 in
    --pg-uri) uri=$2; shift 2 ;;
    --factum) factum=$2; shift 2 ;;
    --events) events=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --json) json=1; shift ;;
    *) echo "usage: $0 --pg-uri URI [--factum BIN] [--events N] [--runs N] [--json]" >&2; exit 2 ;;
  esac
done
[[ -n $uri ]] || { echo "--pg-uri is required" >&2; exit 2; }
[[ -z $factum || -x $factum ]] || { echo "--factum: $factum is not an executable" >&2; exit 2; }
((events >= 100 && events % 100 == 0)) || { echo "--events must be a multiple of 100" >&2; exit 2; }
streams=$((events / 100)) # 100 events per stream: 1,000 streams for 100,000 events

# The peers, pinned, installed once into the cache dir; the scripts are copied next to them.
cache=${XDG_CACHE_HOME:+$XDG_CACHE_HOME/factum-peers}
cache=${cache:-/tmp/factum-peers}
packages=(@event-driven-io/emmett@0.42.0 @event-driven-io/emmett-postgresql@0.42.0
          @event-driven-io/pongo@0.16.11 @eventide/message-db@1.3.1 pg@8.23.1)
mkdir -p "$cache"
if [[ $(cat "$cache/.installed" 2>/dev/null) != "${packages[*]}" ]]; then
  echo "installing ${packages[*]} into $cache" >&2
  echo '{"private": true, "type": "module"}' >"$cache/package.json"
  (cd "$cache" && npm install --no-audit --no-fund --loglevel=error "${packages[@]}" >&2)
  echo "${packages[*]}" >"$cache/.installed"
fi
cp "$here"/*.mjs "$here/mdb-inserver.sql" "$cache/"

admin() { PGOPTIONS='-c client_min_messages=warning' psql "$uri" -X -q -v ON_ERROR_STOP=1 "$@"; }
dburi() { node -e 'const u = new URL(process.argv[1]); u.pathname = "/" + process.argv[2]; console.log(u.href)' "$uri" "$1"; }
fresh() { admin -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1"; }
drop() { admin -c "DROP DATABASE IF EXISTS $1"; }

# Message DB's install.sh runs psql/createdb with a bare database name: give it the URI's
# host, port and user through the libpq environment.
eval "$(node -e 'const u = new URL(process.argv[1]);
  console.log(`export PGHOST=${JSON.stringify(u.hostname)} PGPORT=${u.port || 5432} PGUSER=${JSON.stringify(decodeURIComponent(u.username))}`);
  if (u.password) console.log(`export PGPASSWORD=${JSON.stringify(decodeURIComponent(u.password))}`)' "$uri")"
role_existed=$(admin -tAc "SELECT 1 FROM pg_roles WHERE rolname = 'message_store'")
mdb_install() {
  drop factum_peers_mdb
  DATABASE_NAME=factum_peers_mdb PGOPTIONS='-c client_min_messages=warning' \
    bash "$cache/node_modules/@eventide/message-db/database/install.sh" >/dev/null
}
sqlite_dir=$(mktemp -d)
cleanup() {
  rm -rf "$sqlite_dir"
  drop factum_peers_factum || true
  drop factum_peers_emmett || true
  drop factum_peers_mdb || true
  [[ -n $role_existed ]] || admin -c "DROP ROLE IF EXISTS message_store" || true
}
trap cleanup EXIT

results=$(mktemp)
payload=$(cd "$cache" && node -e 'import("./common.mjs").then(m => console.log(m.payloadJson))')
for ((r = 1; r <= runs; ++r)); do
  for kase in append1 append100; do
    if [[ -n $factum ]]; then
      echo "run $r/$runs: factum-pg $kase" >&2
      fresh factum_peers_factum
      "$factum" --store "$(dburi factum_peers_factum)" --peer factum-pg --case "$kase" \
        --events "$events" --streams "$streams" | grep '^{"peer"' >>"$results"
      drop factum_peers_factum

      echo "run $r/$runs: factum-sqlite $kase" >&2
      "$factum" --store "$sqlite_dir/$kase-$r.db" --peer factum-sqlite --case "$kase" \
        --events "$events" --streams "$streams" | grep '^{"peer"' >>"$results"
      rm -f "$sqlite_dir/$kase-$r.db"*
    fi

    echo "run $r/$runs: emmett $kase" >&2
    fresh factum_peers_emmett
    (cd "$cache" && node emmett.mjs "$(dburi factum_peers_emmett)" "$kase" "$events" "$streams") | grep '^{"peer"' >>"$results"
    drop factum_peers_emmett

    echo "run $r/$runs: mdb-node $kase" >&2
    mdb_install
    (cd "$cache" && node mdb-node.mjs "$(dburi factum_peers_mdb)" "$kase" "$events" "$streams") | grep '^{"peer"' >>"$results"

    echo "run $r/$runs: mdb-sql $kase" >&2
    mdb_install
    out=$(psql "$(dburi factum_peers_mdb)" -X -q -v case="$kase" -v events="$events" -v streams="$streams" \
      -v payload="$payload" -f "$cache/mdb-inserver.sql" 2>&1) || { echo "$out" >&2; exit 1; }
    sed -n 's/^.*NOTICE:  \({.*\)$/\1/p' <<<"$out" >>"$results" # the results are NOTICEs
    drop factum_peers_mdb
  done
  if [[ -n $factum ]]; then
    echo "run $r/$runs: factum-pg append1_procs" >&2
    fresh factum_peers_factum
    "$factum" --store "$(dburi factum_peers_factum)" --peer factum-pg --case append1_procs \
      --events "$((events / 5))" --processes 4 --connections 4 | grep '^{"peer"' >>"$results"
    drop factum_peers_factum
  fi
done

server=$(admin -tAc "SELECT current_setting('server_version') || ', fsync=' || current_setting('fsync') || ', synchronous_commit=' || current_setting('synchronous_commit')")
node "$here/summarize.mjs" "$results" "$events" "$streams" "$runs" "$server" "${packages[*]}" $json
rm -f "$results"
