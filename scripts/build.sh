#!/usr/bin/env bash
# Configures and builds Strata in build/ (or $STRATA_BUILD_DIR). Extra arguments go to cmake's configure step.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${STRATA_BUILD_DIR:-$root/build}"
jobs="${STRATA_JOBS:-$(nproc)}"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
elif [ $# -gt 0 ]; then
  cmake "$build" "$@"
fi
# STRATA_BUILD_TARGETS: build only these targets (space-separated); everything when unset.
targets=()
for t in ${STRATA_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "$jobs" "${targets[@]}"
