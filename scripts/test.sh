#!/usr/bin/env bash
# The test command: installs missing Debian packages, configures, builds (warnings are
# errors) and runs every test with ctest, ending with ctest's summary.
#
#   BUILD_DIR   build directory (default: build, under the source tree)
#   BUILD_TYPE  CMAKE_BUILD_TYPE (default: RelWithDebInfo)
#   JOBS        parallel build jobs (default: the number of cores)
#   TEST_JOBS   parallel tests (default: three times JOBS: many tests wait on timeouts, the Kafka
#               mock cluster's rebalances or the PostgreSQL server rather than on a core)
#   CMAKE_ARGS  extra arguments for cmake's configure step, e.g. "-DCMAKE_CXX_COMPILER=clang++"
#   CTEST_ARGS  extra arguments for ctest, e.g. "-L concurrency" or "-LE consumer"
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}
test_jobs=${TEST_JOBS:-$((jobs * 3))}

bash "$root/scripts/install-deps.sh"

# RelWithDebInfo with line tables only (-g1): file:line in backtraces and debuggers, without the
# full debug information that made every compile 40% slower and every test executable's link
# heavier (docs/performance.md, "The test command"). CMAKE_ARGS can set other flags.
build_type=${BUILD_TYPE:-RelWithDebInfo}
flags=()
if [[ "$build_type" == RelWithDebInfo ]]; then
  flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG")
fi
# The command line and the samples as unity builds, and binutils' gold linker for the ~150
# programs (docs/performance.md, "The test command"). Not lld: Debian 12's lld 14 wrote
# zero-length unwind entries (FDEs) for functions of a unity-built sample, so an exception thrown
# there ended in std::terminate instead of its catch; gold and ld.bfd link the same objects right.
flags+=(-DFACTUM_UNITY_BUILD=ON)
if command -v ld.gold >/dev/null; then
  flags+=(-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=gold)
fi

# shellcheck disable=SC2086  # CMAKE_ARGS and CTEST_ARGS are word lists on purpose
cmake -S "$root" -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE="$build_type" \
  -DFACTUM_WARNINGS_AS_ERRORS=ON \
  "${flags[@]}" \
  ${CMAKE_ARGS:-}
cmake --build "$build_dir" --parallel "$jobs"
# shellcheck disable=SC2086
ctest --test-dir "$build_dir" --output-on-failure --parallel "$test_jobs" --no-tests=error ${CTEST_ARGS:-}
