#!/usr/bin/env bash
# Installs the Debian 12 packages factum needs to build, test and run CI, when any is missing.
# Runs apt-get (update first) only if dpkg-query reports a package as not installed.
# Needs root for the install (or sudo, when it is there).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config ccache
  libsqlite3-dev sqlite3 libboost-dev libboost-serialization-dev libssl-dev
  doctest-dev libcli11-dev nlohmann-json3-dev python3 python3-cryptography openssl
  clang libclang-rt-14-dev clang-format
  postgresql-15 libpq-dev
  librdkafka-dev
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root (or install sudo)" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y "${missing[@]}" </dev/null
