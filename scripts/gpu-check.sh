#!/usr/bin/env bash
# Runs on the GPU machine, in one device call, over a bundle made here by scripts/device-pack.sh (carry .device).
# Writes every log under $OUT and prints a short table last.
#
#   STRATA_CHECK   which steps, comma-separated (default: machine,tests,mkmodel,inspect,cpu,peer-cpu)
#     machine   CPU, RAM, GPU, and the CPU read bandwidth (bench tool)
#     tests     the unit tests of the bundle, the `gpu` label included (ctest is not needed: gtest runs them)
#     mkmodel   generates the qwen3-30b-a3b q4_k_m model on local disk, timed (mkmodel's throughput)
#     inspect   strata inspect of that model
#     cpu       strata bench on the CPU backend (cpu_avx2), all cores: pp512 and tg128
#     peer-cpu  llama.cpp's llama-bench (CPU build, if bundled) on the same file and thread count
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-/tmp/strata-out}"
mkdir -p "$OUT"
bin="$root/.device/bin"
steps=",${STRATA_CHECK:-machine,tests,mkmodel,inspect,cpu,peer-cpu},"
quant="${STRATA_QUANT:-q4_k_m}"
model="${STRATA_MODEL_DIR:-/tmp}/qwen3-30b-a3b-$quant.gguf"
threads="$(nproc)"
reps="${STRATA_REPS:-3}"
declare -a table

want() { [[ "$steps" == *",$1,"* ]]; }
row() { table+=("$1"); }
log() { printf '\n==== %s ====\n' "$*" | tee -a "$OUT/check.log"; }

if [ ! -x "$bin/strata" ]; then
  echo "gpu-check: no bundle at $bin: run scripts/device-pack.sh here and carry .device" >&2
  exit 2
fi
export PATH="$bin:$PATH"

if want machine; then
  log machine
  { nproc; lscpu | grep -E 'Model name|Flags' | cut -c1-300; free -g; nvidia-smi -L 2>&1; } > "$OUT/machine.txt" 2>&1
  head -3 "$OUT/machine.txt"
  if [ -x "$bin/strata_bench_cpu_kernels" ]; then
    strata_bench_cpu_kernels --workers $((threads - 1)) --seconds 1 > "$OUT/cpu_kernels.txt" 2>&1
    row "cpu kernels bench (exit $?): $(grep -iE 'read' "$OUT/cpu_kernels.txt" | head -2 | tr '\n' ' ')"
  fi
fi

if want tests; then
  log tests
  strata_tests --gtest_brief=1 > "$OUT/tests.txt" 2>&1
  rc=$?
  row "unit tests (bundle): exit $rc, $(grep -E 'PASSED|FAILED' "$OUT/tests.txt" | head -2 | tr '\n' ' ')"
fi

if want mkmodel; then
  log mkmodel
  rm -f "$model"
  strata mkmodel --arch qwen3moe --shape qwen3-30b-a3b --quant "$quant" --seed 1 --out "$model" > "$OUT/mkmodel.txt" 2>&1
  row "mkmodel qwen3-30b-a3b $quant on $threads cores: exit $?; $(tail -1 "$OUT/mkmodel.txt")"
fi

if want inspect; then
  log inspect
  strata inspect "$model" > "$OUT/inspect.txt" 2>&1
  row "inspect: exit $?; $(grep -E 'total:' "$OUT/inspect.txt" | tail -1 | sed 's/^ *//')"
fi

if want cpu; then
  log "strata bench, cpu_avx2, $threads threads"
  strata bench --model "$model" --backend cpu_avx2 -o plugins.cpu_avx2.workers=$((threads - 1)) \
    -p 512 -n 128 -r "$reps" > "$OUT/bench-cpu.md" 2> "$OUT/bench-cpu.log"
  rc=$?
  cat "$OUT/bench-cpu.md"
  row "strata bench cpu_avx2 (exit $rc):"
  while IFS= read -r l; do row "  $l"; done < <(grep -E 'pp|tg' "$OUT/bench-cpu.md")
fi

if want peer-cpu; then
  peer="$root/.device/peer-cpu/llama-bench"
  if [ -x "$peer" ]; then
    log "llama.cpp llama-bench, CPU build, $threads threads"
    LD_LIBRARY_PATH="$(dirname "$peer")" "$peer" -m "$model" -p 512 -n 128 -r "$reps" -t "$threads" > "$OUT/bench-peer-cpu.md" 2> "$OUT/bench-peer-cpu.log"
    rc=$?
    cat "$OUT/bench-peer-cpu.md"
    row "llama.cpp CPU (exit $rc):"
    while IFS= read -r l; do row "  $l"; done < <(grep -E 'pp|tg' "$OUT/bench-peer-cpu.md")
  else
    row "llama.cpp CPU: not bundled"
  fi
fi

printf '\n==== summary ====\n'
for r in "${table[@]}"; do printf '%s\n' "$r"; done | tee "$OUT/summary.txt"
