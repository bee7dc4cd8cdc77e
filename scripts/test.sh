#!/usr/bin/env bash
# The README's second command: install what is missing, build, run the whole test suite.
#
#   1. the normal build (build/): every test but the `gpu` label (run on the GPU machine by scripts/gpu-check.sh)
#   2. a sanitizer pass (build-asan/): the unit tests under ASan+UBSan, GPU plugins left out
#   3. a bounded fuzz pass (build-fuzz/): each libFuzzer target for STRATA_FUZZ_SECONDS (default 60) seconds
#
# Warnings are errors when CI is set (as on the CI machine) or STRATA_WERROR=ON. CI builds the CUDA plugin for sm_90
# only (STRATA_CUDA_ARCHS overrides; a plain build targets the local GPU, or sm_90 plus the consumer archs).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${STRATA_JOBS:-$(nproc)}"
werror="${STRATA_WERROR:-$([ -n "${CI:-}" ] && echo ON || echo OFF)}"
fuzz_seconds="${STRATA_FUZZ_SECONDS:-60}"
cuda_archs="${STRATA_CUDA_ARCHS:-$([ -n "${CI:-}" ] && echo 90 || true)}"
arch_args=()
[ -n "$cuda_archs" ] && arch_args=("-DCMAKE_CUDA_ARCHITECTURES=$cuda_archs")

"$root/scripts/install-deps.sh"

started=$(date +%s)
step() { printf '\n==== %s (at %d s) ====\n' "$*" $(( $(date +%s) - started )); }

step "build (Release, -Werror=$werror)"
STRATA_BUILD_DIR="$root/build" "$root/scripts/build.sh" -DSTRATA_WERROR="$werror" "${arch_args[@]}"
step "tests"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs" -LE 'gpu|fuzz'

step "sanitizer pass (ASan+UBSan, no GPU plugins)"
STRATA_BUILD_DIR="$root/build-asan" "$root/scripts/build.sh" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTRATA_SANITIZE=address,undefined -DSTRATA_CUDA=OFF -DSTRATA_HIP=OFF -DSTRATA_WERROR="$werror"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" -LE 'gpu|fuzz|slow'

step "fuzz pass (${fuzz_seconds}s per target)"
STRATA_BUILD_DIR="$root/build-fuzz" STRATA_BUILD_TARGETS=strata_fuzzers "$root/scripts/build.sh" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DSTRATA_FUZZ=ON -DSTRATA_TESTS=ON \
  -DSTRATA_CUDA=OFF -DSTRATA_HIP=OFF -DSTRATA_FUZZ_SECONDS="$fuzz_seconds"
ctest --test-dir "$root/build-fuzz" --output-on-failure -L fuzz

step "all passes green"
