#!/usr/bin/env bash
# The main command: installs missing Debian packages, builds factum and runs the bank
# sample's demo (`factum-bank demo`) on an embedded SQLite file, ending with the audit's
# verdict. The store is left at $DEMO_DB for the other commands to explore:
#   build/samples/bank/factum-bank --db build/bank-demo.db accounts
#
#   BUILD_DIR   build directory (default: build, under the source tree)
#   BUILD_TYPE  CMake build type (default: RelWithDebInfo)
#   JOBS        parallel build jobs (default: the number of cores)
#   DEMO_DB     the demo's store file (default: $BUILD_DIR/bank-demo.db; recreated each run)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
demo_db=${DEMO_DB:-$build_dir/bank-demo.db}

bash "$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}"
cmake --build "$build_dir" --parallel "${JOBS:-$(nproc)}" --target factum-bank

exec "$build_dir/samples/bank/factum-bank" --db "$demo_db" demo --fresh
