#!/usr/bin/env bash
# A private PostgreSQL server for the tests (label "postgres"), started and stopped by ctest's
# fixture tests postgres_cluster_start / postgres_cluster_stop (tests/CMakeLists.txt).
#
#   pg-test-cluster.sh start DIR   initdb a fresh cluster, start it on a free port of
#                                  127.0.0.1, write its URI to DIR/uri
#   pg-test-cluster.sh stop DIR    stop it (fast shutdown) and remove its data
#
# The cluster: user "factum" (trust authentication, superuser), database "postgres", the unix
# socket in the cluster's directory, and settings for speed, not durability (fsync off, ...;
# FACTUM_PG_DURABLE=1 below turns them on).
# DIR/uri holds postgresql://factum@127.0.0.1:PORT/postgres while the server runs.
#
# As root, initdb and postgres run as the user "postgres" (they refuse to run as root), in a
# directory that user owns: DIR/cluster, or a directory under /tmp when that user cannot
# reach DIR (a path it may not traverse, e.g. a build tree under a 0700 home) or the socket's
# path would be too long. DIR/base names the directory used. The server's log is base/log
# (DIR/log links to it).
#
# A cluster belongs to the run that started it: the process that ran `start` (ctest, for the
# fixture), recorded in DIR/owner. While that process lives, another run's `start` on the same
# DIR is refused (exit 1, naming the owner: two `ctest -L postgres` in one build tree would
# otherwise stop each other's server) and its `stop` leaves the server alone. A start after a
# stale run (its owner gone: a killed ctest, or its files left) stops that server and starts
# afresh. Starts and stops on one DIR take turns (flock on DIR/lock). FACTUM_PG_TAKE_OVER=1
# ignores the owner (e.g. to stop by hand a cluster started from another shell).
#
#   FACTUM_PG_DURABLE=1  fsync, synchronous_commit and full_page_writes on, as a production
#                     server has them: for benchmarks (factum_bench --backend postgres), not
#                     for the tests
#   FACTUM_PG_BINDIR  the PostgreSQL 15 server programs (default: /usr/lib/postgresql/15/bin,
#                     else pg_config --bindir, else the directory of pg_ctl on PATH)
set -euo pipefail

usage() {
  echo "usage: $0 start|stop DIR" >&2
  exit 2
}
[[ $# -eq 2 ]] || usage
action=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd)

say() { echo "pg-test-cluster: $*"; }
die() {
  echo "pg-test-cluster: $*" >&2
  exit 1
}

find_bindir() {
  local candidate
  for candidate in "${FACTUM_PG_BINDIR:-}" /usr/lib/postgresql/15/bin \
    "$(pg_config --bindir 2>/dev/null || true)" \
    "$(dirname "$(command -v pg_ctl 2>/dev/null || echo /nonexistent/pg_ctl)")"; do
    if [[ -n "$candidate" && -x "$candidate/pg_ctl" && -x "$candidate/initdb" ]]; then
      echo "$candidate"
      return 0
    fi
  done
  die "no PostgreSQL server programs (pg_ctl, initdb) found: install postgresql-15" \
    "(scripts/install-deps.sh), or set FACTUM_PG_BINDIR"
}

# as_server <command...>: runs a server program as the user it must run as, from "/" (the
# current directory may be one that user cannot enter), without the lock's descriptor (a server
# that inherited it would hold DIR's lock for as long as it runs).
if [[ $(id -u) -eq 0 ]]; then
  id postgres >/dev/null 2>&1 || die "running as root needs the user \"postgres\" (installed" \
    "with postgresql-15) to run the server as"
  server_user=postgres
  as_server() { (cd / && runuser -u postgres -- "$@" 9>&-); }
else
  server_user=$(id -un)
  as_server() { (cd / && "$@" 9>&-); }
fi

# This run: the process that called the script (ctest, for the fixture tests), as "PID
# START-TIME" (/proc/PID/stat's field 22, so that a reused pid is another process).
process_id() {
  local pid=$1 stat
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }  # the fields after the command's name (which may hold spaces)
  echo "$pid $(echo "$stat" | awk '{print $20}')"
}
me=$(process_id "$PPID")

# The run that owns the cluster of DIR when it is another one and still running, else nothing.
other_owner() {
  local owner pid
  [[ -z "${FACTUM_PG_TAKE_OVER:-}" ]] || return 0
  owner=$(cat "$dir/owner" 2>/dev/null) || return 0
  pid=${owner%% *}
  if [[ "$owner" != "$me" && "$(process_id "$pid" 2>/dev/null)" == "$owner" ]]; then
    echo "process $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-80))"
  fi
}

# The directory the cluster lives in: DIR/base's content, else DIR/cluster.
base_of() {
  if [[ -f "$dir/base" ]]; then
    cat "$dir/base"
  else
    echo "$dir/cluster"
  fi
}

log_tail() {
  local log=$1
  if [[ -f "$log" ]]; then
    echo "---- last lines of $log" >&2
    tail -n 40 "$log" >&2 || true
    echo "----" >&2
  fi
}

# Stops the server of `base` if one runs there, and removes the cluster's files.
stop_cluster() {
  local base=$1 bindir=$2
  if [[ -f "$base/data/postmaster.pid" ]]; then
    if ! as_server "$bindir/pg_ctl" -D "$base/data" -m fast -w -t 60 stop >/dev/null 2>&1; then
      # Still running after a minute, or pg_ctl could not tell: make sure no server is left.
      as_server "$bindir/pg_ctl" -D "$base/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
      local pid
      pid=$(head -n 1 "$base/data/postmaster.pid" 2>/dev/null || true)
      if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null &&
        [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == postgres* ]]; then
        kill -KILL "$pid" 2>/dev/null || true
      fi
    fi
  fi
  rm -rf "$base"
}

stop() {
  local bindir base owner
  owner=$(other_owner)
  if [[ -n "$owner" ]]; then
    say "left running: the cluster in $dir belongs to another run, $owner"
    return 0
  fi
  bindir=$(find_bindir)
  base=$(base_of)
  rm -f "$dir/uri"
  stop_cluster "$base" "$bindir"
  rm -f "$dir/base" "$dir/log" "$dir/owner"
  say "stopped; removed $base"
}

free_port() {
  python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# Whether the server user can create files in `base` (all of its parents traversable).
server_can_use() {
  as_server test -w "$1" -a -x "$1" 2>/dev/null
}

start() {
  local bindir base port attempt log owner
  owner=$(other_owner)
  if [[ -n "$owner" ]]; then
    die "the test server in $dir is in use by another run, $owner: wait for it to end" \
      "(two runs of the PostgreSQL tests in one build tree cannot share it), or run in another" \
      "build tree"
  fi
  bindir=$(find_bindir)
  # A stale run: its server (if any) is stopped and its files removed first.
  rm -f "$dir/uri"
  if [[ -e "$(base_of)" ]]; then
    say "stopping a previous run's cluster in $(base_of)"
    stop_cluster "$(base_of)" "$bindir"
  fi
  rm -f "$dir/base" "$dir/log"

  base="$dir/cluster"
  mkdir -p "$base"
  chown "$server_user" "$base"
  chmod 700 "$base"
  # The socket path (base/.s.PGSQL.PORT) must fit in sun_path (107 bytes).
  if ! server_can_use "$base" || [[ ${#base} -gt 80 ]]; then
    rm -rf "$base"
    base=$(mktemp -d /tmp/factum-pg.XXXXXX)
    chown "$server_user" "$base"
    say "user $server_user cannot use $dir (or its path is too long): cluster in $base"
  fi
  echo "$base" >"$dir/base"
  log="$base/log"
  if [[ "$base" != "$dir/cluster" ]]; then ln -sfn "$log" "$dir/log"; fi

  if ! as_server "$bindir/initdb" -D "$base/data" --auth=trust -U factum --encoding=UTF8 \
    --locale=C --no-sync --no-instructions >"$base/initdb.log" 2>&1; then
    log_tail "$base/initdb.log"
    die "initdb failed (${bindir}/initdb, as $server_user)"
  fi
  local durable=off
  [[ "${FACTUM_PG_DURABLE:-0}" == 1 ]] && durable=on
  cat >>"$base/data/postgresql.conf" <<EOF

# factum tests (scripts/pg-test-cluster.sh): fast, not durable (unless FACTUM_PG_DURABLE=1),
# local only
listen_addresses = '127.0.0.1'
unix_socket_directories = '$base'
fsync = $durable
synchronous_commit = $durable
full_page_writes = $durable
max_connections = 300
shared_buffers = 64MB
max_wal_size = 1GB
EOF

  # A port is free when checked, but may be taken before the server binds it: try another.
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    if as_server "$bindir/pg_ctl" -D "$base/data" -l "$log" -o "-p $port" -w -t 60 start \
      >"$base/pg_ctl.log" 2>&1; then
      echo "$me" >"$dir/owner"
      echo "postgresql://factum@127.0.0.1:${port}/postgres" >"$dir/uri"
      say "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" \
        "(cluster $base, log $log); URI in $dir/uri"
      return 0
    fi
    if grep -q -E "could not bind|Address already in use|could not create any TCP/IP" \
      "$log" 2>/dev/null; then
      say "port $port was taken (attempt $attempt); trying another"
      # A server that failed to start leaves no postmaster; clear the log for the next try.
      : >"$log"
      continue
    fi
    break
  done
  cat "$base/pg_ctl.log" >&2 || true
  log_tail "$log"
  # Leave no server running (one may still be starting); the files stay for a look, until
  # the next start or stop removes them.
  if [[ -f "$base/data/postmaster.pid" ]]; then
    as_server "$bindir/pg_ctl" -D "$base/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  die "the server did not start (pg_ctl start, as $server_user); its files: $base"
}

# One start or stop at a time on DIR: a second run's start waits for the first one's, then
# finds its owner.
exec 9>"$dir/lock"
flock 9

case "$action" in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
