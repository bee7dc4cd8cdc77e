#!/usr/bin/env bash
# The README's second command: install what is missing, build, run the whole test suite.
#
#   1. the normal build (build/): every test but the `gpu` label (run on the GPU machine by scripts/gpu-check.sh);
#      the unit tests in one process per core (gtest shards), the others through ctest
#   2. a sanitizer pass (build-asan/): the unit and CLI tests under ASan+UBSan, GPU plugins left out
#   3. a bounded fuzz pass (build-fuzz/): each libFuzzer target for STRATA_FUZZ_SECONDS (default 12) seconds, one
#      target per core at a time
#
# Step 1 is scripts/build.sh as the README's first command runs it (the same build/, the same configuration: after
# scripts/quickstart.sh nothing is rebuilt): warnings are errors when CI is set (as on the CI machine) or
# STRATA_WERROR=ON, and the CUDA plugin is built for every default arch (STRATA_CUDA_ARCHS overrides).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${STRATA_JOBS:-$(nproc)}"
werror="${STRATA_WERROR:-$([ -n "${CI:-}" ] && echo ON || echo OFF)}"
fuzz_seconds="${STRATA_FUZZ_SECONDS:-12}"  # eight targets: about 50 s on CI's two cores

"$root/scripts/install-deps.sh" --tests

started=$(date +%s)
step() { printf '\n==== %s (at %d s) ====\n' "$*" $(( $(date +%s) - started )); }

# unit_shards BUILD NAME: the unit tests of BUILD in one process per core, each a shard of them (gtest's sharding),
# side by side; every shard's log printed, and a failure named. One process per test (ctest's) costs more than
# most tests take.
unit_shards() {
  local build="$1" name="$2" pids=() ok=1 i
  for ((i = 0; i < jobs; i++)); do
    GTEST_TOTAL_SHARDS="$jobs" GTEST_SHARD_INDEX="$i" "$build/tests/strata_tests" --gtest_brief=1 \
      > "$build/unit-shard-$i.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < jobs; i++)); do
    wait "${pids[$i]}" || ok=0
    echo "---- $name unit tests, shard $i of $jobs ----"
    cat "$build/unit-shard-$i.log"
  done
  [ "$ok" = 1 ] || { echo "test.sh: a $name unit test shard failed (logs: $build/unit-shard-*.log)" >&2; exit 1; }
}

step "build (Release, -Werror=$werror)"
STRATA_BUILD_DIR="$root/build" "$root/scripts/build.sh"
step "tests"
ctest --test-dir "$root/build" --output-on-failure -j "$jobs" -LE 'gpu|fuzz|unit'
unit_shards "$root/build" Release

step "sanitizer pass (ASan+UBSan, clang, no GPU plugins)"
# clang, so that a second compiler's warnings and sanitizers see the code (the normal build is GCC's), and because it
# builds this pass in half GCC's time on CI's two cores. The libraries at -O1 with line tables (what sanitizers are
# meant to run at); the tests' own code at -O0 (tests/CMakeLists.txt). The unit tests run in one process per core
# (per-test processes cost more than the tests under ASan). Each library is one unity batch here
# (STRATA_UNITY_BATCH=0): two files that name the same thing at file scope fail this build (with clang's warnings,
# also an overload that hides another's), whichever batches a later file list would put them in.
STRATA_BUILD_DIR="$root/build-asan" STRATA_BUILD_TARGETS="strata_tests strata strata_fake_plugins strata-cpu_avx2" \
  "$root/scripts/build.sh" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_UNITY_BATCH=0 \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" \
  -DSTRATA_SANITIZE=address,undefined -DSTRATA_CUDA=OFF -DSTRATA_HIP=OFF -DSTRATA_WERROR="$werror"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Left out under ASan: the op-parity cases sized for the GPU's tiled paths (130-token MoE and product windows, the
# 33,000-position attention, the deep verify-window shape). On the CPU they run their smaller siblings' code (no
# branch of cpu_avx2 or the reference depends on those sizes) at 4 to 30 times the work: about 90 s of the pass's
# 440 s of tests on CI's two cores. The normal pass above runs them.
GTEST_FILTER='-*n_tok_130*:*n_ctx_33000*:*ctx4096_at1500*' unit_shards "$root/build-asan" ASan
ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" -L cli
unset ASAN_OPTIONS UBSAN_OPTIONS

step "fuzz pass (${fuzz_seconds}s per target)"
STRATA_BUILD_DIR="$root/build-fuzz" STRATA_BUILD_TARGETS=strata_fuzzers "$root/scripts/build.sh" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DSTRATA_FUZZ=ON -DSTRATA_TESTS=ON \
  -DSTRATA_CUDA=OFF -DSTRATA_HIP=OFF -DSTRATA_FUZZ_SECONDS="$fuzz_seconds"
ctest --test-dir "$root/build-fuzz" --output-on-failure -j "$jobs" -L fuzz

step "all passes green"
