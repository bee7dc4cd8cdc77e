#!/usr/bin/env bash
# Installs the Debian 12 packages Strata builds with, only those that are missing. With --tests also what the whole
# test suite needs: clang for the fuzzers, python3-jinja2, chromium and curl, and the npm packages of the server's
# client tests (tests/serve/node_modules, pinned by its package-lock.json).
# Usage: scripts/install-deps.sh [--tests | --ci]   (uses sudo when not root)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

packages=(
  # build
  cmake ninja-build g++ pkg-config
  # core
  libboost-dev libyaml-cpp-dev nlohmann-json3-dev libcpp-httplib-dev
  # images (core/src/vision): PNG and JPEG decoding
  libpng-dev libjpeg-dev
  # the unit tests (built with everything else)
  libgtest-dev libgmock-dev
  # the HIP plugin (build-tested only: Debian's ROCm 5.2)
  hipcc libamdhip64-dev rocm-device-libs
)
tests=0
[ "${1:-}" = "--tests" ] && tests=1
# --ci: only git, which .ci/run needs for its clean clone before any other step runs.
if [ "${1:-}" = "--ci" ]; then packages=(git); fi
if [ "$tests" = 1 ]; then
  packages+=(
    # fuzzing (libFuzzer needs clang and its runtime)
    clang-14 libclang-rt-14-dev
    # the chat-template reference renderer (tests/template/)
    python3-jinja2
    # the server's client tests (tests/serve): the page in headless chromium, SSE framing with curl
    chromium curl
  )
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: every package is there"
else
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[ "$tests" = 1 ] || exit 0

# Node 20+ and npm come with the machine (Debian 12's nodejs is 18, too old for the tests' packages).
serve_tests="$root/tests/serve"
installed_lock="$serve_tests/node_modules/.package-lock.json"
if [ -f "$installed_lock" ] && [ ! "$serve_tests/package-lock.json" -nt "$installed_lock" ]; then
  echo "install-deps: tests/serve/node_modules is there"
elif ! command -v npm >/dev/null || ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)'; then
  echo "install-deps: tests/serve needs Node 20 or newer with npm; install them, then run this again" >&2
  exit 2
else
  echo "install-deps: npm ci in tests/serve (openai, playwright-core; no browser download: the tests use chromium)"
  (cd "$serve_tests" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
fi
