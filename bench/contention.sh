#!/usr/bin/env bash
# Contention as a benchmark: runs one decode benchmark alone and beside N busy processes, trial by trial, and prints
# each trial's tokens/s and the ratio (beside / alone). The worst trial counts: a thread pool that waits for a thread
# the OS has not scheduled shows up as one trial that collapses, not as a lower mean.
#
# usage: bench/contention.sh [-b N] [-t TRIALS] [-i NICE] [-w SECONDS] [-m MIN_RATIO] [-B 'BUSY COMMAND'] -- BENCH...
#   -b N          busy processes beside the bench (default 2)
#   -t TRIALS     trials; each runs the bench alone, then beside the busy processes (default 4)
#   -i NICE       nice level of the busy processes (default 0: un-niced, they compete as equals)
#   -w SECONDS    how long the busy processes run before the bench starts (default 0.5)
#   -m MIN_RATIO  exit 1 when the worst trial's ratio is below this (default: report only)
#   -B COMMAND    one busy process (default 'yes', its output to /dev/null)
#   BENCH...      the bench command; its tokens/s is the number before '±' on the last markdown table row, which
#                 both `strata bench` and llama.cpp's `llama-bench` print, so the two are measured alike
# example (this repository's tiny MoE on the CPU backend):
#   bench/contention.sh -b 2 -t 4 -- build/strata bench --model models/stories260K-moe.gguf --backend cpu_avx2 \
#       -p 0 -n 128 -r 5
#   and llama.cpp on the same file and thread count:
#   bench/contention.sh -b 2 -t 4 -- llama-bench -m models/stories260K-moe.gguf -p 0 -n 128 -r 5 -t 2
set -u

busy=2 trials=4 nice_level=0 warm=0.5 min_ratio="" busy_cmd="yes"
while getopts "b:t:i:w:m:B:h" opt; do
  case $opt in
    b) busy=$OPTARG ;;
    t) trials=$OPTARG ;;
    i) nice_level=$OPTARG ;;
    w) warm=$OPTARG ;;
    m) min_ratio=$OPTARG ;;
    B) busy_cmd=$OPTARG ;;
    *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
if [ $# -eq 0 ]; then
  echo "contention.sh: no bench command (give it after --)" >&2
  exit 2
fi

pids=()
stop_busy() {
  # Only the processes this script started, by their ids.
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pids=()
}
trap 'stop_busy; exit 130' INT TERM

# The bench's tokens/s: the number before '±' on its last table row.
rate() {
  local out
  out=$("$@" 2>/dev/null) || { echo "bench failed: $*" >&2; echo 0; return; }
  printf '%s\n' "$out" | grep '^|.*±' | tail -1 | sed 's/±.*//' | awk -F'|' '{gsub(/ /, "", $NF); print $NF}'
}

echo "bench: $*"
echo "beside: $busy x '$busy_cmd' at nice $nice_level; $trials trials; $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
others=$(pgrep -c -f 'ninja|cc1plus|nvcc|ptxas' || true)
[ "${others:-0}" -gt 0 ] && echo "note: $others build processes are running: they load the machine too"
printf '%-6s %12s %12s %8s\n' trial alone beside ratio
worst=""
for t in $(seq 1 "$trials"); do
  alone=$(rate "$@")
  for _ in $(seq 1 "$busy"); do
    nice -n "$nice_level" sh -c "exec $busy_cmd" > /dev/null &
    pids+=($!)
  done
  sleep "$warm"
  beside=$(rate "$@")
  stop_busy
  ratio=$(awk -v a="$alone" -v b="$beside" 'BEGIN { printf "%.3f", (a > 0 ? b / a : 0) }')
  printf '%-6s %12s %12s %8s\n' "$t" "$alone" "$beside" "$ratio"
  worst=$(awk -v w="$worst" -v r="$ratio" 'BEGIN { print (w == "" || r < w) ? r : w }')
done
echo "worst ratio: $worst (load after: $(cut -d' ' -f1-3 /proc/loadavg))"
if [ -n "$min_ratio" ] && awk -v w="$worst" -v m="$min_ratio" 'BEGIN { exit !(w < m) }'; then
  echo "below the minimum ratio $min_ratio" >&2
  exit 1
fi
