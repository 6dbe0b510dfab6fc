#!/usr/bin/env bash
# The main command: installs missing Debian packages, builds factum and runs the bank
# sample's demo (`factum-bank demo`). The bank sample is not written yet: until it is, this
# builds everything and then says so, exiting 1.
#
#   BUILD_DIR   build directory (default: build, under the source tree)
#   JOBS        parallel build jobs (default: the number of cores)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}

bash "$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}"
cmake --build "$build_dir" --parallel "${JOBS:-$(nproc)}"

bank="$build_dir/samples/bank/factum-bank"
if [[ ! -x "$bank" ]]; then
  echo "demo: the bank sample (samples/bank) is not built yet: it does not exist in this version of factum" >&2
  exit 1
fi
exec "$bank" demo
