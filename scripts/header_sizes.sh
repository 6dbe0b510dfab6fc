#!/usr/bin/env bash
# Prints, as a Markdown table, how many lines each public header of factum preprocesses to on
# its own (what a translation unit that includes only it parses), and whether it pulls in
# Boost.Serialization or Boost.Signals2. docs/headers.md keeps the table and says why it matters.
#
#   scripts/header_sizes.sh [SOURCE_DIR]    (default: this script's checkout)
#
#   CXX        the compiler (default: g++)
#   CXXFLAGS   extra flags for it (default: none), e.g. "-stdlib=libc++" with clang++
#
# A header that does not preprocess on its own (a missing include) is reported as "error".
set -euo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cxx=${CXX:-g++}
modules=(eventstore snapshots aggregates projections)

include_flags=()
for module in "${modules[@]}"; do
  include_flags+=(-I "$root/$module/include")
done
include_flags+=(-I "$root/include")

headers=()
for module in "${modules[@]}"; do
  while IFS= read -r header; do
    headers+=("${header#"$root/$module/include/"}")
  done < <(find "$root/$module/include" -name '*.hpp' | LC_ALL=C sort)
done
headers+=(factum/factum.hpp)

echo "| header | preprocessed lines | Boost.Serialization | Boost.Signals2 |"
echo "|---|---:|:---:|:---:|"
for header in "${headers[@]}"; do
  # shellcheck disable=SC2086  # CXXFLAGS is a word list on purpose
  if ! out=$(echo "#include <$header>" |
    "$cxx" -std=c++20 ${CXXFLAGS:-} "${include_flags[@]}" -E -x c++ - 2>/dev/null); then
    echo "| \`$header\` | error | | |"
    continue
  fi
  lines=$(wc -l <<<"$out")
  serialization=no
  signals=no
  grep -q '^# [0-9]* ".*/boost/serialization/' <<<"$out" && serialization=yes
  grep -q '^# [0-9]* ".*/boost/signals2/' <<<"$out" && signals=yes
  echo "| \`$header\` | $lines | $serialization | $signals |"
done
