#!/usr/bin/env bash
# Installs the Debian 12 packages Strata builds and tests with, only those that are missing.
# Usage: scripts/install-deps.sh   (uses sudo when not root)
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ pkg-config
  # core
  libboost-dev libyaml-cpp-dev nlohmann-json3-dev
  # tests, fuzzing (libFuzzer needs clang and its runtime)
  libgtest-dev libgmock-dev clang-14 libclang-rt-14-dev
  # the HIP plugin (build-tested only: Debian's ROCm 5.2)
  hipcc libamdhip64-dev rocm-device-libs
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: every package is there"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
