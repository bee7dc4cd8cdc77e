#!/usr/bin/env bash
# Configures and builds Strata in build/ (or $STRATA_BUILD_DIR). Extra arguments go to cmake's configure step.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${STRATA_BUILD_DIR:-$root/build}"
jobs="${STRATA_JOBS:-$(nproc)}"
# Warnings are errors when CI is set (as on the CI machine) or STRATA_WERROR=ON; a user's plain build keeps them
# warnings, so that a new compiler or an arch nobody measured still builds. STRATA_CUDA_ARCHS overrides the CUDA
# archs (by default the local GPU's, or sm_90 plus the consumer archs: cmake/StrataGPU.cmake).
werror="${STRATA_WERROR:-$([ -n "${CI:-}" ] && echo ON || echo OFF)}"
defaults=(-DCMAKE_BUILD_TYPE=Release "-DSTRATA_WERROR=$werror")
[ -n "${STRATA_CUDA_ARCHS:-}" ] && defaults+=("-DCMAKE_CUDA_ARCHITECTURES=$STRATA_CUDA_ARCHS")
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${generator[@]}" "${defaults[@]}" "$@"
else
  # An existing build keeps its configuration, but for what the environment asks for explicitly.
  again=()
  [ -n "${STRATA_WERROR:-}${CI:-}" ] && again+=("-DSTRATA_WERROR=$werror")
  [ -n "${STRATA_CUDA_ARCHS:-}" ] && again+=("-DCMAKE_CUDA_ARCHITECTURES=$STRATA_CUDA_ARCHS")
  if [ $# -gt 0 ] || [ ${#again[@]} -gt 0 ]; then cmake "$build" "${again[@]}" "$@"; fi
fi
# STRATA_BUILD_TARGETS: build only these targets (space-separated); everything when unset.
targets=()
for t in ${STRATA_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "$jobs" "${targets[@]}"
