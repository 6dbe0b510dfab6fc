#!/usr/bin/env python3
"""What the format-2 insert guards cost: python3 bench/insert_guards_bench.py [--events N] [--reps R]

Creates factum's schema (read from eventstore/src/sqlite/schema.cpp) in fresh WAL files, with and
without the insert guards (kInsertGuards), and inserts N event rows over 100 streams in one
statement with the sqlite3 shell (synchronous=NORMAL). Prints the CPU time per inserted row of
each side (the child's user+system time, best of R runs, sides alternating) and their ratio: CPU,
not wall time, because these machines are shared. Needs the sqlite3 program (Debian package
sqlite3).
"""
import argparse
import os
import re
import resource
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def schema_parts():
    src = open(os.path.join(ROOT, "eventstore", "src", "sqlite", "schema.cpp")).read()
    schema = re.search(r'kSchema = R"sql\((.*?)\)sql"', src, re.S).group(1)
    guards = re.search(r'kInsertGuards = R"sql\((.*?)\)sql"', src, re.S).group(1)
    return schema, guards


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(path, setup, events):
    for f in (path, path + "-wal", path + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    subprocess.run(["sqlite3", path], input="PRAGMA journal_mode=WAL;\n" + setup, text=True,
                   check=True, capture_output=True)
    insert = f"""PRAGMA synchronous=NORMAL;
INSERT INTO streams (stream_id, category) SELECT 's-' || v, 's' FROM
  (WITH RECURSIVE c(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM c WHERE v < 100) SELECT v FROM c);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {events})
INSERT INTO events (position, stream_key, stream_version, event_id, type, schema_version, payload,
                    recorded_at, hash)
SELECT i, 1 + (i - 1) % 100, 1 + (i - 1) / 100, randomblob(16), 'bench.X', 1, zeroblob(200), 0,
       zeroblob(32) FROM c;
"""
    before = child_cpu()
    subprocess.run(["sqlite3", path], input=insert, text=True, check=True)
    return (child_cpu() - before) / events * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200000)
    parser.add_argument("--reps", type=int, default=4)
    args = parser.parse_args()
    if args.events < 1 or args.reps < 1:
        parser.error("--events and --reps must be positive")
    schema, guards = schema_parts()
    times = {False: [], True: []}
    with tempfile.TemporaryDirectory(prefix="factum-guards-") as tmp:
        path = os.path.join(tmp, "guards.db")
        for rep in range(args.reps):
            for guarded in ((False, True) if rep % 2 == 0 else (True, False)):
                times[guarded].append(run(path, schema + (guards if guarded else ""), args.events))
    plain, guarded = min(times[False]), min(times[True])
    print(f"insert_guards_bench: {args.events} rows, best of {args.reps} runs per side")
    print(f"  without guards (ceiling)  {plain:6.2f} us CPU per row")
    print(f"  with guards               {guarded:6.2f} us CPU per row   ratio {plain / guarded:.2f}"
          f"   (+{guarded - plain:.2f} us per row)")


if __name__ == "__main__":
    main()
