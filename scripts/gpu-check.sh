#!/usr/bin/env bash
# Runs on the GPU machine, in one device call, over a bundle made here by scripts/device-pack.sh (carry .device).
# Writes every log under $OUT and prints a short table last.
#
#   STRATA_CHECK   which steps, comma-separated (default: machine,tests,mkmodel,gpu-tests,cuda,peer-cuda)
#     machine    CPU, RAM, GPU, and the CPU read bandwidth (bench tool)
#     tests      the unit tests of the bundle (the op-parity suite includes every usable backend: cuda here)
#     mkmodel    generates the qwen3-30b-a3b model (STRATA_QUANT, default q4_k_m; STRATA_ROUTER_SKEW, e.g. zipf:1.0,
#                skews its routing and names another file) on local disk, timed; then the ring's fill rate from it
#                (strata_bench_ring_fill: one thread against 8)
#     gpu-tests  the `gpu` label: op parity on cuda (STRATA_PARITY_FILTER narrows it), stories260K greedy on every
#                backend, strata_gpu_tests (tiny GPU = CPU over 64 tokens; the 30B teacher-forced top-1 agreement
#                over 256 positions; the hybrid path; STRATA_GPU_FILTER narrows it, a gtest filter)
#     arch       ArchLlamaCpp.* and ArchVision.* (the tiny gpt-oss, glm4moe, deepseek2, qwen3moe and qwen3vlmoe files
#                against llama.cpp's outputs, in .device/shared-data when device-pack bundled it) and the verify windows
#                (EngineSpeculative.*, HybridSpeculative.*), on every usable backend
#     vision     issue 32's time to first token: the qwen3-vl-30b-a3b pair, a 1024x768 picture and a ~1K-token prompt (about 1,050 tokens under mkmodel's vocabulary)
#                on cuda at STRATA_VISION_BUDGET (default 25%) and all in VRAM, STRATA_VISION_ROUNDS (default 2) rounds each, each followed by llama-mtmd-cli when bundled (the encode's place
#                and seconds, the prompt's seconds, the first token's time from the process's start), then one --profile-image run
#     inspect    strata inspect of that model
#     cpu        strata bench on the CPU backend (cpu_avx2), all cores: pp512 and tg128
#     peer-cpu   llama.cpp's llama-bench (CPU build, if bundled) on the same file and thread count
#     cuda       strata bench on the cuda backend (every weight in VRAM): pp512 and tg128
#     link       the link probe (strata bench --link on cuda): pinned host-to-device rate, a queued copy's cost, the
#                host's read rate and the experts.pcie_frac they give this model
#     gpu-ops    single-op timings on the GPU (strata_bench_gpu_ops: us per op, GB/s of weights; STRATA_GPU_OPS_MATCH
#                keeps the rows naming it, STRATA_GPU_OPS_SECONDS the time a row)
#     profile    where decode time goes, op by op (strata bench --profile), on cpu_avx2 (unless
#                STRATA_PROFILE_CPU=0) and on cuda, the cuda one after STRATA_PROFILE_DEPTH tokens of context
#                (default 0), and a prompt of STRATA_PROFILE_PROMPT tokens (default 512)
#     ncu        Nsight Compute over a short greedy decode on cuda (STRATA_NCU_COUNT kernels, default 1200; the
#                prompt STRATA_NCU_PROMPT): each kernel's mean time and DRAM read rate, to see where time goes
#     context    issue 28 item 5: 262,144 tokens with q8_0 KV all on the card and under runtime.gpu_memory=24GiB (the same
#                text), and f16 KV under that cap refused
#     ncu-detail Nsight Compute's sections (speed of light, occupancy, stalls, pipes) for a few launches of the
#                kernels matching STRATA_NCU_DETAIL in a 512-token prompt, and of the decode attention at depth;
#                STRATA_NCU_DETAIL_WINDOW=K adds the MoE decode kernels in verify windows of K tokens
#                (STRATA_NCU_DETAIL_PROMPT=0 / STRATA_NCU_DETAIL_DECODE=0 leave the first two out)
#     speculative issue 30: verify windows' cost by the 100%-acceptance ceiling (n_max 1, 3, 4, 7; all in VRAM and at
#                25%), where a window of 1, 4, 5 and 8 tokens spends its time (bench --profile-window), and
#                stories260K-moe's acceptance with ngram and with stories260K as its draft, on cuda
#     hybrid     strata bench on cuda with the routed experts' VRAM budget at each of STRATA_HYBRID_BUDGETS (default
#                25%): the hybrid path (cache, PCIe reads, CPU pool), pcie_frac from the link probe; then, unless
#                STRATA_HYBRID_POOL=0, the pool alone (pcie_frac 0) at the first budget; expert summaries in the logs
#                STRATA_HYBRID_SIMPLE=1 adds simple mode (runtime.graphs=false) at the first budget;
#                STRATA_HYBRID_OPTS adds options to each (e.g. "-o plugins.cpu_avx2.spin_us=2000")
#     gate       the exactness gates on that model (strata gate, configs/gate-cuda.yaml; the GPU lines in float unless
#                STRATA_GATE_ARITH=double, the CPU lines with canonical_double): the all-GPU run saved, and
#                checked against it: all-GPU without CUDA graphs; the hybrid engine at 100%, 25% and 0% caches with
#                pcie_frac 0, 0.5 and 1, with adaptive swaps, with pcie_balance on (pcie_frac unset), in simple mode
#                with and without CUDA graphs; then the CPU engine at a 1024-token context: against the all-GPU run
#                at that context, and force_avx2 against the AVX-512 path (STRATA_GATE_SET=gpu|cpu: one half only)
#     canon-cost tg128/pp512 with the canonical plugins and the non-canonical build's (STRATA_PACK_NONCANONICAL=1
#                device-pack.sh), in pairs: the hybrid engine at 25% and the CPU engine (what the float rules cost)
#     slots      runtime.slots on cuda: EngineSlots.* (sequences together equal each alone, every backend), then tg64
#                with one sequence and with two at once (strata bench --slots 2), hybrid at 25% and all-GPU
#     twocard    the second card (STRATA_PEER_DEVICE, default 0: a second logical device on GPU 0):
#                runtime.peer_device's gates against the all-GPU run (saved here unless the gate step ran) with
#                pcie_frac 0 / 0.5 / 1, peer_hot 1, simple mode, swaps; runtime.layer_split's (STRATA_SPLIT, default 24) with every weight on the cards,
#                on the hybrid path at 25% (programs and simple mode); then tg128/pp512 at 25% on one card, with the
#                peer (its summary line) and split; tg64 with two sequences at once (--slots 2) on the split
#     peerlink   two `strata engine` processes on GPU 0 joined by the peer link (25% each, both serving): a request
#                on each at once, then a 400-token one on role 0 during which role 1 is killed; every request's ids
#                against a one-card `strata run`, and each side's `peer link` summary lines
#     desk       strata serve with serve.elastic.lanes 2 on GPU 0 (lead with its peer tier and the link, helper woken
#                for a second request, put to sleep after hold_s, killed during a request): scripts/desk_client.py
#     serve      strata serve on the hybrid path (25%, pcie_balance on): chat completions, a request's own pcie_frac,
#                /live and /metrics
#     balance    plugins/pcie_balance off and on in pairs (tg128, 25%), with a slow pool and all workers
#     peer-hybrid llama.cpp's llama-bench -ngl 99 -fa on --n-cpu-moe N -t <all cores>, for each N of STRATA_PEER_NCMOE
#                (default 36: 12 of 48 layers' experts in VRAM, the bytes of a 25% budget)
#     rounds     interleaved rounds (STRATA_ROUNDS, default 2): strata tg128 at 25% then llama.cpp -ncmoe 36, strata at
#                0% then -ncmoe 48, same file; each pair's ratio and the pool's roofline line
#     contention strata at 25% and llama.cpp -ncmoe 36 (at -t all and half the cores, -n 32 -r 1), alone and beside
#                STRATA_BUSY (default 8) busy nice-19 loops; what each keeps, and strata over llama.cpp under load
#     forms      forms of one build (STRATA_FORMS: space-separated NAME:KEY=VALUE items, a launch option where KEY
#                has a dot, else an environment variable, e.g. "graphs:plugins.cuda.graphs=true
#                nographs:plugins.cuda.graphs=false"; a NAME alone runs the build as it is; "baseline" runs
#                .device/baseline's cuda plugin, e.g. STRATA_FORMS="this baseline" for an A/B of two commits),
#                interleaved in STRATA_FORMS_ROUNDS (default 2) rounds with llama.cpp last in each
#                (STRATA_FORMS_PEER=0: not): -p STRATA_FORMS_P (default 16384; "512,16384" takes both) -n 0 all in
#                VRAM; each form's ratio to the first and to llama.cpp, and one greedy run's ids each way against the
#                first (STRATA_FORMS_IDS=0: not); by default "this baseline"
#     long       issue 28's long-context targets (pp16384, tg64 at depth 16384, pp512; all in VRAM and at 25% against
#                -ncmoe 36; tg64 at depth 131072 with q8_0 KV), Strata then llama.cpp per round (STRATA_LONG_ROUNDS);
#                at 25% also pp16384 with prompt windows of STRATA_LONG_BATCHES tokens (default 2048; "" for none)
#                and tg64 at depth 16384 beside STRATA_LONG_BUSY (default 8; 0: none) busy nice-19 loops;
#                then (STRATA_LONG_PROFILE=1, the default) where pp16384's time goes, op by op
#     hostcopy   issue 29: the experts' host copy, the mapped file (auto: registered; and "small", with
#                experts.huge_pages=false) against the filled arena, interleaved (STRATA_HOSTCOPY_ROUNDS, default 2)
#                at 25% and 0%, tg64 repeated STRATA_HOSTCOPY_REPS times (default 4); the file staged through the
#                ring at 25%; the added-RSS and placement lines of each (100% too)
#     start      issue 29: `strata run -n 1`'s startup line all in VRAM and at 25% against llama.cpp's load time
#                (llama-completion beside the peer's llama-bench, or STRATA_PEER_CLI; else llama-bench -p 1 timed)
#     warmstart  issue 29: `strata profile` at 25%, then the first 64 tokens' hit rate cold and with experts.profile
#                auto (use a skewed router: STRATA_ROUTER_SKEW=zipf:1.0 with mkmodel)
#     big        a model larger than half the RAM on a 100 GB tmpfs (STRATA_BIG_DIR): by default issue 29's
#                qwen3-235b-a22b iq2_xs at 10% against llama.cpp -ncmoe 84, pp512 and tg32 (STRATA_BIG_* pick
#                issue 31's shapes: see the step; STRATA_BIG_BALANCE=1 adds a Strata run with pcie_balance on;
#                STRATA_BIG_OPTS adds -o options to Strata's runs, e.g. "-o experts.host_copy=file_registered";
#                STRATA_BIG_PROFILE=1 adds Strata's op profile of decode and a 512-token prompt); the file removed after
#     peer-cuda  llama.cpp's llama-bench -ngl 99 -fa on, when a binary is given: STRATA_PEER_CUDA, else
#                .device/peer-cuda/llama-bench. It is built from a fetched copy outside the project; no build of it
#                is committed here (docs/PERFORMANCE.md says how the figures were taken).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-/tmp/strata-out}"
mkdir -p "$OUT"
bin="$root/.device/bin"
steps=",${STRATA_CHECK:-machine,tests,mkmodel,gpu-tests,cuda,peer-cuda},"
quant="${STRATA_QUANT:-q4_k_m}"
skew="${STRATA_ROUTER_SKEW:-}"  # e.g. zipf:1.0: mkmodel's --router-skew (another file name)
model="${STRATA_MODEL_DIR:-/tmp}/qwen3-30b-a3b-$quant${skew:+-${skew/:/}}.gguf"
threads="$(nproc)"
reps="${STRATA_REPS:-3}"
declare -a table

want() { [[ "$steps" == *",$1,"* ]]; }
row() { table+=("$1"); }

# gate_run NAME SAVED|save ARGS...: one `$g` run (the step sets g: strata gate and its common options), its verdict
# line in the table and its log appended to gate.log.
gate_run() {
  local name="$1" ref="$2"; shift 2
  local mode=(--check "$OUT/gate-$ref.json")
  [ "$ref" = save ] && mode=(--save "$OUT/gate-$name.json")
  local t0=$SECONDS
  printf '\n---- %s: %s %s\n' "$name" "$*" "${mode[*]}" >> "$OUT/gate.log"
  $g "$@" "${mode[@]}" > "$OUT/gate-$name.log" 2>&1
  local rc=$?
  cat "$OUT/gate-$name.log" >> "$OUT/gate.log"
  local verdict
  verdict="$(grep -E '^strata gate: (PASS|FAIL)' "$OUT/gate-$name.log" | tail -1)"
  [ "$ref" = save ] && verdict="saved"
  row "$(printf 'gate %-34s exit %d %3ds  %s' "$name" "$rc" $((SECONDS - t0)) "${verdict:-(no verdict: see gate.log)}")"
}
log() { printf '\n==== %s ====\n' "$*" | tee -a "$OUT/check.log"; }
# top_ops LOG: the four largest rows of an op profile's table (op, total ms, share).
top_ops() { grep -E '^\| [A-Z_]+' "$1" | head -4 | awk -F'|' '{printf "%s %s ms %s; ", $2, $4, $6}' | tr -s ' '; }

# The compressed bundle (STRATA_PACK_XZ=1 device-pack.sh; carry .device-pack): the bundle and the shared test data.
if [ ! -x "$bin/strata" ] && [ -f "$root/.device-pack/strata.tar.xz" ]; then
  tar -xJf "$root/.device-pack/strata.tar.xz" -C "$root"
fi
if [ ! -x "$bin/strata" ]; then
  echo "gpu-check: no bundle at $bin: run scripts/device-pack.sh here and carry .device (or .device-pack)" >&2
  exit 2
fi
export PATH="$bin:$PATH"
export LD_LIBRARY_PATH="$root/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # device-pack's extra libraries

# The tests were built in build-device/ of the lead's checkout and look for plugins, data and the executable at
# those paths: make them exist here, pointing into this copy.
# Where the build itself is (the machine that packed it: a real `strata` there, not a link) it is left alone.
build_root="$(cat "$root/.device/build-root" 2>/dev/null || true)"
if [ -n "$build_root" ] && { [ -L "$build_root/strata" ] || [ ! -e "$build_root/strata" ]; }; then
  src_root="$(dirname "$build_root")"
  if [ ! -e "$src_root" ]; then mkdir -p "$(dirname "$src_root")" && ln -s "$root" "$src_root"; fi
  mkdir -p "$build_root/plugins"
  ln -sf "$bin"/libstrata-*.so "$build_root/plugins/"
  if [ -d "$root/.device/fake_plugins" ]; then
    mkdir -p "$build_root/tests"
    rm -rf "$build_root/tests/fake_plugins"
    ln -s "$root/.device/fake_plugins" "$build_root/tests/fake_plugins"
  fi
  ln -sf "$bin/strata" "$build_root/strata"
  # The tests read ../shared/data (beside the source tree) for llama.cpp's outputs on tiny models.
  if [ -d "$root/.device/shared-data" ] && [ ! -e "$(dirname "$src_root")/shared/data" ]; then
    mkdir -p "$(dirname "$src_root")/shared" && ln -s "$root/.device/shared-data" "$(dirname "$src_root")/shared/data"
  fi
fi

if want machine; then
  log machine
  { nproc; lscpu | grep -E 'Model name|Flags'; free -g; nvidia-smi -L 2>&1; } > "$OUT/machine.txt" 2>&1
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
  strata mkmodel --arch qwen3moe --shape qwen3-30b-a3b --quant "$quant" --seed 1 ${skew:+--router-skew "$skew"} \
    --out "$model" > "$OUT/mkmodel.txt" 2>&1
  row "mkmodel qwen3-30b-a3b $quant ${skew:+(router skew $skew) }on $threads cores: exit $?; $(tail -1 "$OUT/mkmodel.txt")"
  # The pinned ring's fill rate from the new file (in the page cache): one thread against 8 (prompt windows' fills).
  if [ -x "$bin/strata_bench_ring_fill" ]; then
    strata_bench_ring_fill "$model" --threads 8 --rounds 2 > "$OUT/ring-fill.md" 2>&1
    row "ring fill from the file, GB/s by (threads, round): $(grep -E '^\| [0-9]' "$OUT/ring-fill.md" | awk -F'|' '{printf "(%s,%s) %s; ", $2, $3, $4}' | tr -s ' ')"
  fi
fi

if want gpu-tests; then
  log "gpu tests"
  strata_tests --gtest_brief=1 --gtest_filter="${STRATA_PARITY_FILTER:-Parity/BackendOps.*/cuda_*:Parity/AttentionWindows.*/cuda_*}" \
    > "$OUT/gpu-parity.txt" 2>&1
  rc=$?
  row "op parity on cuda: exit $rc, $(grep -cE '^\[       OK|^\[  PASSED' "$OUT/gpu-parity.txt") ok lines, $(grep -E 'PASSED|FAILED|SKIPPED' "$OUT/gpu-parity.txt" | head -3 | tr '\n' ' ')"
  strata_tests --gtest_brief=1 --gtest_filter='EngineGreedy.*' > "$OUT/gpu-greedy.txt" 2>&1
  row "stories260K greedy on every backend (cuda included): exit $?, $(grep -E 'PASSED|FAILED' "$OUT/gpu-greedy.txt" | head -2 | tr '\n' ' ')"
  # A driver call that never returns must not take the whole call with it. STRATA_GPU_E2E=0 leaves these out.
  if [ "${STRATA_GPU_E2E:-1}" = 1 ]; then
  STRATA_GPU_MODEL_30B="$model" timeout 360 strata_gpu_tests --gtest_filter="${STRATA_GPU_FILTER:-*}" > "$OUT/gpu-e2e.txt" 2>&1
  row "strata_gpu_tests: exit $?, $(grep -E '^\[(tiny|qwen3|link)' "$OUT/gpu-e2e.txt" | tr '\n' ' ') $(grep -E 'PASSED|FAILED|SKIPPED' "$OUT/gpu-e2e.txt" | head -3 | tr '\n' ' ')"
  fi
fi

if want arch; then
  log "architectures against llama.cpp, and verify windows, on every backend (cuda included)"
  strata_tests --gtest_brief=1 --gtest_filter='ArchLlamaCpp.*:ArchVision.*:VisionBackendEncoder.*:ServeImages.*' > "$OUT/arch.txt" 2>&1
  row "ArchLlamaCpp/ArchVision/VisionBackendEncoder (reference, cpu_avx2, cuda): exit $?, $(grep -E 'PASSED|FAILED|SKIPPED' "$OUT/arch.txt" | head -3 | tr '\n' ' ')"
  while IFS= read -r l; do row "  $l"; done < <(grep -E '^cuda' "$OUT/arch.txt" | head -8)
  strata_tests --gtest_brief=1 --gtest_filter='EngineSpeculative.*:HybridSpeculative.*' > "$OUT/speculative.txt" 2>&1
  row "EngineSpeculative/HybridSpeculative: exit $?, $(grep -E 'PASSED|FAILED|SKIPPED' "$OUT/speculative.txt" | head -3 | tr '\n' ' ')"
fi

if want vision; then
  # STRATA_VISION_OPTS: extra launch options for Strata's runs (-o runtime.batch=2048, say).
  # Issue 32's time to first token: the qwen3-vl-30b-a3b pair (text model at STRATA_QUANT, F16 projector), a
  # 1024x768 picture and a ~1K-token prompt (about 1,050 tokens under mkmodel's vocabulary), on cuda at STRATA_VISION_BUDGET (default 25%) and all in VRAM; the
  # image line says where and how fast it was encoded, the startup line when the first token came.
  vl="${STRATA_MODEL_DIR:-/tmp}/qwen3-vl-30b-a3b-$quant.gguf" vlp="${STRATA_MODEL_DIR:-/tmp}/qwen3-vl-30b-a3b-mmproj.gguf"
  log "vision: the encoder's ops against the CPU encoder and llama.cpp's embeddings (f32 and f16 attention)"
  strata_tests --gtest_brief=1 --gtest_filter='VisionBackendEncoder.*:ArchVision.F16AttentionEncoderGivesLlamaCppsIds' > "$OUT/vision-encoder-tests.txt" 2>&1
  row "VisionBackendEncoder (reference, cpu_avx2, cuda): exit $?, $(grep -E 'PASSED|FAILED|SKIPPED' "$OUT/vision-encoder-tests.txt" | head -3 | tr '\n' ' ')"
  while IFS= read -r l; do row "  $l"; done < <(grep -E '^cuda' "$OUT/vision-encoder-tests.txt" | head -6)
  log "vision: mkmodel qwen3-vl-30b-a3b"
  strata mkmodel --shape qwen3-vl-30b-a3b --quant "$quant" --seed 1 --out "$vl" --mmproj-out "$vlp" > "$OUT/vision-mkmodel.txt" 2>&1
  row "mkmodel qwen3-vl-30b-a3b: exit $?; $(tail -2 "$OUT/vision-mkmodel.txt" | tr '\n' ' ')"
  python3 - "$OUT/picture-1024x768.ppm" <<'PY'
import sys
w, h = 1024, 768
px = bytearray()
for y in range(h):
    for x in range(w):
        d = (x - 340) ** 2 + (y - 384) ** 2 < 200 ** 2
        px += bytes((240 if d else x * 255 // w, 200 if d else y * 255 // h, 30 if (x // 16) % 2 else 220))
open(sys.argv[1], "wb").write(b"P6\n%d %d\n255\n" % (w, h) + px)
PY
  { printf '<__media__>\nThe picture above was taken for a report. '; for i in $(seq 1 22); do printf 'Section %d of the report describes the harbour, its ledger and the light in some detail. ' "$i"; done; printf '\nDescribe the picture.'; } > "$OUT/vision-prompt.txt"
  for budget in "${STRATA_VISION_BUDGET:-25%}" auto; do
    for round in $(seq 1 "${STRATA_VISION_ROUNDS:-2}"); do
      strata run --model "$vl" --mmproj "$vlp" --image "$OUT/picture-1024x768.ppm" --file "$OUT/vision-prompt.txt" \
        --backend cuda -o experts.cache="$budget" ${STRATA_VISION_OPTS-} -n 16 --temperature 0 > /dev/null 2> "$OUT/vision-$budget-$round.log"
      row "vision ttft cache $budget ${STRATA_VISION_OPTS-}round $round (exit $?): ready $(grep -oE 'ready in [0-9.]+ s' "$OUT/vision-$budget-$round.log" | head -1); $(grep -oE 'image [^:]*: [0-9]+ tokens \([0-9x]+\) encoded on [a-z_0-9]+ in [0-9.]+ s' "$OUT/vision-$budget-$round.log" | sed 's/^image [^:]*: //'); $(grep -oE 'prompt [0-9]+ tokens in [0-9.]+ s' "$OUT/vision-$budget-$round.log"); $(grep -oE 'first token at [0-9.]+ s' "$OUT/vision-$budget-$round.log")"
      # The peer on the same pair, picture and prompt, right after: llama-mtmd-cli (STRATA_PEER_MTMD, else
      # .device/peer-cuda/llama-mtmd-cli; built from a fetched copy outside the project, never committed) with
      # -ncmoe 36 for the 25% budget (12 of 48 layers' experts on the card) and every layer on the card for auto;
      # -n 1: the process's wall time from start to its first token and exit (Strata's line counts to the token).
      mtmd="${STRATA_PEER_MTMD:-$root/.device/peer-cuda/llama-mtmd-cli}"
      if [ -x "$mtmd" ]; then
        ncm=(); [ "$budget" = auto ] || ncm=(-ncmoe 36)
        t0=$(date +%s.%N)
        LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib64" "$mtmd" -m "$vl" --mmproj "$vlp" --image "$OUT/picture-1024x768.ppm" \
          -f "$OUT/vision-prompt.txt" -ngl 99 -fa on "${ncm[@]}" -n 1 --temp 0 -t "$threads" > "$OUT/vision-peer-$budget-$round.txt" 2> "$OUT/vision-peer-$budget-$round.log"
        rc=$?
        row "vision peer llama-mtmd-cli ${ncm[*]:-all layers} round $round (exit $rc): process $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s; $(grep -oE 'image slice encoded in [0-9]+ ms|image decoded.* in [0-9]+ ms|prompt eval time = *[0-9.]+ ms / *[0-9]+ tokens' "$OUT/vision-peer-$budget-$round.log" | tr '\n' ' ')"
      fi
    done
  done
  # Where the encode goes, op by op (strata run --profile-image): the four largest rows of the table.
  strata run --model "$vl" --mmproj "$vlp" --image "$OUT/picture-1024x768.ppm" --prompt "<__media__> Describe." \
    --backend cuda -n 1 --temperature 0 --profile-image > /dev/null 2> "$OUT/vision-profile.log"
  row "vision encode profile (exit $?): $(top_ops "$OUT/vision-profile.log")"
  rm -f "$vl" "$vlp"
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

if want cuda; then
  log "strata bench, cuda"
  strata bench --model "$model" --backend cuda -p 512 -n 128 -r "$reps" > "$OUT/bench-cuda.md" 2> "$OUT/bench-cuda.log"
  rc=$?
  cat "$OUT/bench-cuda.md"; tail -3 "$OUT/bench-cuda.log"
  row "strata bench cuda (exit $rc):"
  while IFS= read -r l; do row "  $l"; done < <(grep -E 'pp|tg' "$OUT/bench-cuda.md")
fi

if want gpu-ops && [ -x "$bin/strata_bench_gpu_ops" ]; then
  log "gpu ops"
  # STRATA_GPU_OPS_MATCH: only the single-op rows naming it (e.g. "MUL_MAT", "1 token at", "4096/1408").
  strata_bench_gpu_ops ${STRATA_GPU_OPS_SECONDS:+--seconds "$STRATA_GPU_OPS_SECONDS"} \
    ${STRATA_GPU_OPS_MATCH:+--match "$STRATA_GPU_OPS_MATCH"} > "$OUT/gpu-ops.txt" 2>&1
  row "gpu ops bench (exit $?):"
  while IFS= read -r l; do row "  $l"; done < <(grep -E '^\|' "$OUT/gpu-ops.txt")
fi

if want profile; then
  log "decode profiles"
  if [ "${STRATA_PROFILE_CPU:-1}" != 0 ]; then
    strata bench --model "$model" --backend cpu_avx2 -o plugins.cpu_avx2.workers=$((threads - 1)) -p 0 -n 4 -r 1 \
      --profile 16 > /dev/null 2> "$OUT/profile-cpu.txt"
  fi
  # STRATA_PROFILE_DEPTH (default 0): the decode profile after a context of that many tokens (the tg test at that
  # depth too); STRATA_PROFILE_PROMPT (default 512): the prompt profile's length.
  pdepth="${STRATA_PROFILE_DEPTH:-0}" pprompt="${STRATA_PROFILE_PROMPT:-512}"
  strata bench --model "$model" --backend cuda -p 0 -n 4 -r 1 -d "$pdepth" --profile 32 --profile-prompt "$pprompt" \
    > /dev/null 2> "$OUT/profile-cuda.txt"
  cat "$OUT/profile-cuda.txt"
  row "profiles: $OUT/profile-cpu.txt, $OUT/profile-cuda.txt"
  row "decode profile at depth $pdepth: $(sed -n '/^decode profile/,/^prompt profile/p' "$OUT/profile-cuda.txt" > "$OUT/profile-decode.txt"; top_ops "$OUT/profile-decode.txt")"
  row "prompt profile pp$pprompt: $(sed -n '/^prompt profile/,$p' "$OUT/profile-cuda.txt" > "$OUT/profile-prompt.txt"; top_ops "$OUT/profile-prompt.txt")"
fi

if want ncu; then
  log "ncu: the kernels of a short decode"
  ncu_bin="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
  if [ -z "$ncu_bin" ]; then
    row "ncu: not found"
  else
    timeout 300 "$ncu_bin" --clock-control none --cache-control none --csv --print-units base \
      --launch-count "${STRATA_NCU_COUNT:-1200}" --metrics gpu__time_duration.sum,dram__bytes_read.sum \
      strata run --model "$model" --backend cuda -p "${STRATA_NCU_PROMPT:-Once upon a time}" -n 3 --temperature 0 \
      > "$OUT/ncu.csv" 2> "$OUT/ncu.log"
    row "ncu (exit $?): $OUT/ncu-kernels.txt"
    python3 - "$OUT/ncu.csv" > "$OUT/ncu-kernels.txt" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]; col = {n: i for i, n in enumerate(head)}
per = collections.defaultdict(dict)
for r in rows[1:]:
    per[r[col["ID"]]][r[col["Metric Name"]]] = float(r[col["Metric Value"]].replace(",", "") or 0)
    per[r[col["ID"]]]["name"] = r[col["Kernel Name"]][:90]
    per[r[col["ID"]]]["grid"] = r[col["Grid Size"]] + "x" + r[col["Block Size"]]
agg = collections.defaultdict(lambda: [0, 0.0, 0.0, ""])
for k in per.values():
    a = agg[k["name"]]; a[0] += 1; a[1] += k.get("gpu__time_duration.sum", 0); a[2] += k.get("dram__bytes_read.sum", 0); a[3] = k["grid"]
total = sum(a[1] for a in agg.values())
print(f"{len(per)} kernels, {total/1e3:.1f} us in all")
print(f"{'count':>6} {'total us':>9} {'mean us':>8} {'GB/s':>7}  grid x block  kernel")
for n, a in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"{a[0]:6d} {a[1]/1e3:9.1f} {a[1]/a[0]/1e3:8.2f} {a[2]/max(a[1],1):7.0f}  {a[3]:>14}  {n}")
PY
    head -25 "$OUT/ncu-kernels.txt"
  fi
fi

if want ncu-detail; then
  # Why a kernel takes its time (Nsight Compute's speed-of-light, occupancy, warp-stall, pipe and shared-memory
  # sections, the last with bank conflicts), for the kernels whose names match STRATA_NCU_DETAIL (a regex; default the tiled products and the flash attention),
  # STRATA_NCU_DETAIL_COUNT launches each (default 3) after STRATA_NCU_DETAIL_SKIP (default 20): during a 512-token
  # prompt, then during decode steps at depth STRATA_PROFILE_DEPTH (default 16384).
  log "ncu: kernel detail"
  ncu_bin="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
  if [ -z "$ncu_bin" ]; then
    row "ncu-detail: ncu not found"
  else
    ncu_sections=(--section SpeedOfLight --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis
                  --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section LaunchStats)
    # Beside the sections: why warps wait (each stall reason, warps per issued instruction), shared-memory bank
    # conflicts, instructions and the pipes' shares, as numbers.
    ncu_metrics="smsp__inst_executed.sum,sm__cycles_elapsed.avg,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
    ncu_metrics="$ncu_metrics,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
    ncu_metrics="$ncu_metrics,sm__inst_executed_pipe_tensor_op_imma.avg.pct_of_peak_sustained_active"
    ncu_metrics="$ncu_metrics,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"
    for reason in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle wait not_selected selected \
                  lg_throttle dispatch_stall no_instruction tex_throttle branch_resolving membar drain sleeping misc; do
      ncu_metrics="$ncu_metrics,smsp__average_warps_issue_stalled_${reason}_per_issue_active.ratio"
    done
    if [ "${STRATA_NCU_DETAIL_PROMPT:-1}" = 1 ]; then  # 0: the decode attention's kernels only
    # STRATA_NCU_DETAIL_P: the prompt's length (default 512; 2048 gives every product whole windows of tokens).
    timeout 240 "$ncu_bin" --clock-control none "${ncu_sections[@]}" --metrics "$ncu_metrics" \
      --kernel-name "regex:${STRATA_NCU_DETAIL:-tiled_kernel|attention_flash_tiles}" \
      --launch-skip "${STRATA_NCU_DETAIL_SKIP:-20}" --launch-count "${STRATA_NCU_DETAIL_COUNT:-3}" \
      strata bench --model "$model" --backend cuda -p "${STRATA_NCU_DETAIL_P:-512}" -n 0 -r 1 \
      -o runtime.context=$((${STRATA_NCU_DETAIL_P:-512} + 1024)) > "$OUT/ncu-detail-prompt.txt" 2>&1
    row "ncu-detail prompt (exit $?): $OUT/ncu-detail-prompt.txt"
    fi
    : > "$OUT/ncu-detail-decode.txt"
    if [ "${STRATA_NCU_DETAIL_DECODE:-1}" = 1 ]; then  # 0: leaves out the decode attention at depth
    timeout 240 "$ncu_bin" --clock-control none "${ncu_sections[@]}" \
      --kernel-name "regex:attention_flash_(split|combine)" --launch-count 4 \
      strata bench --model "$model" --backend cuda -p 0 -n 2 -r 1 -d "${STRATA_PROFILE_DEPTH:-16384}" \
      > "$OUT/ncu-detail-decode.txt" 2>&1
    row "ncu-detail decode (exit $?): $OUT/ncu-detail-decode.txt"
    fi
    # STRATA_NCU_DETAIL_WINDOW=K: the MoE decode kernels (STRATA_NCU_WINDOW_KERNELS) in windows of K tokens (the
    # window profile's 16, each 48 layers x 2 launches, after a few one-token steps' 96 each): why a window's
    # experts cost what they do (issue 30). Their grids say the window's size: gate_up's y is (k + 1) x K.
    : > "$OUT/ncu-detail-window.txt"
    if [ -n "${STRATA_NCU_DETAIL_WINDOW:-}" ]; then
      timeout 240 "$ncu_bin" --clock-control none "${ncu_sections[@]}" \
        --kernel-name "regex:${STRATA_NCU_WINDOW_KERNELS:-gate_up_kernel|down_kernel}" \
        --launch-skip "${STRATA_NCU_WINDOW_SKIP:-1000}" --launch-count "${STRATA_NCU_WINDOW_COUNT:-6}" \
        strata bench --model "$model" --backend cuda -p 0 -n 1 -r 1 --profile-window "$STRATA_NCU_DETAIL_WINDOW" \
        > "$OUT/ncu-detail-window.txt" 2>&1
      row "ncu-detail window of $STRATA_NCU_DETAIL_WINDOW (exit $?): $OUT/ncu-detail-window.txt"
    fi
    grep -E '^  [a-z_]+.*\(|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy' \
      "$OUT/ncu-detail-prompt.txt" "$OUT/ncu-detail-decode.txt" "$OUT/ncu-detail-window.txt" | head -120
  fi
fi

if want link; then
  log "link probe"
  strata bench --model "$model" --backend cuda -p 0 -n 0 --link > "$OUT/link.txt" 2>&1
  row "link probe (exit $?): $(grep -E 'link probe|pcie_frac' "$OUT/link.txt" | sed 's/^link probe on [^:]*: //' | tr '\n' ' ')"
fi

# tg_of FILE TEST: the rate of TEST (e.g. tg128) in a markdown table of strata bench or llama-bench, "M ± S".
tg_of() { grep -E "\| +$2 +\|" "$1" | head -1 | grep -oE '[0-9.]+ ± [0-9.]+' | head -1; }
# rss_of LOG: the added RSS's share of file + KV from a bench's last peak-RSS line; ready_of LOG: "ready in N s".
rss_of() { grep -oE 'the added RSS is [0-9.]+%' "$1" | tail -1 | grep -oE '[0-9.]+%'; }
ready_of() { grep -oE 'ready in [0-9.]+ s' "$1" | head -1; }
# ratio A B: A / B of two "M ± S" cells (their means), two decimals; "-" when one is missing.
ratio() { awk -v a="${1%% *}" -v b="${2%% *}" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else printf "-" }'; }
# strata_hybrid TAG BUDGET BENCH-ARGS...: strata bench on cuda at an expert budget (with STRATA_HYBRID_OPTS), its table
# in $OUT/TAG.md and its summaries in $OUT/TAG.log; the exit status is the bench's.
strata_hybrid() {
  local tag="$1" budget="$2"; shift 2
  strata bench --model "$model" --backend cuda -o "experts.cache=$budget" ${STRATA_HYBRID_OPTS:-} "$@" \
    > "$OUT/$tag.md" 2> "$OUT/$tag.log"
}
# peer_hybrid TAG NCMOE THREADS BENCH-ARGS...: llama-bench -ngl 99 -fa on with NCMOE layers' experts on the CPU.
peer_hybrid() {
  local tag="$1" ncmoe="$2" t="$3"; shift 3
  "$peer" -m "$model" -ngl 99 -fa on -ncmoe "$ncmoe" -t "$t" "$@" > "$OUT/$tag.md" 2> "$OUT/$tag.log"
}
peer="${STRATA_PEER_CUDA:-$root/.device/peer-cuda/llama-bench}"
export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/usr/local/cuda/lib64"  # the peer's CUDA runtime and cuBLAS (shared)
# run_forms TAG PROMPTS ROUNDS PEER ITEM...: one build's forms, all in VRAM, interleaved: each round runs
# `strata bench -p PROMPTS -n 0` for every ITEM (NAME:KEY=VALUE, a launch option where KEY has a dot, else an
# environment variable; a NAME alone: the build as it is; "baseline": .device/baseline's cuda plugin), then
# llama.cpp when PEER is 1; rows give each form's ratio to the first and to llama.cpp; then one greedy run's ids
# each way, against the first form's.
run_forms() {
  local tag="$1" prompts="$2" rounds="$3" with_peer="$4"; shift 4
  local items=("$@") ctx round it n t b v pr first
  ctx=$(( $(echo "$prompts" | tr ',' '\n' | sort -n | tail -1) + 1024 ))
  first="${items[0]%%:*}"
  # A form's environment assignments (none, or VAR=VALUE) and its strata options (-o KEY=VALUE).
  form_env() {
    local kv="${1#*:}"
    if [ "$1" = baseline ]; then echo "STRATA_PLUGIN_PATH=$root/.device/baseline"
    elif [[ "$1" == *:* && "${kv%%=*}" != *.* ]]; then echo "$kv"; fi
  }
  form_opts() { local kv="${1#*:}"; [[ "$1" == *:* && "${kv%%=*}" == *.* ]] && echo "-o $kv"; }
  for round in $(seq 1 "$rounds"); do
    log "$tag round $round"
    for it in "${items[@]}"; do
      n="${it%%:*}"
      # shellcheck disable=SC2046
      env $(form_env "$it") strata bench --model "$model" --backend cuda -o runtime.context=$ctx $(form_opts "$it") \
        -p "$prompts" -n 0 -r 1 \
        > "$OUT/$tag$round-$n.md" 2> "$OUT/$tag$round-$n.log"
      cat "$OUT/$tag$round-$n.md"
    done
    if [ "$with_peer" = 1 ] && [ -x "$peer" ]; then
      "$peer" -m "$model" -ngl 99 -fa on -p "$prompts" -n 0 -r 1 > "$OUT/$tag$round-peer.md" 2> "$OUT/$tag$round-peer.log"
      cat "$OUT/$tag$round-peer.md"
    fi
    for t in ${prompts//,/ }; do
      b="$(tg_of "$OUT/$tag$round-$first.md" "pp$t")"
      pr=""; [ -s "$OUT/$tag$round-peer.md" ] && pr="$(tg_of "$OUT/$tag$round-peer.md" "pp$t")"
      for it in "${items[@]}"; do
        n="${it%%:*}"; v="$(tg_of "$OUT/$tag$round-$n.md" "pp$t")"
        row "$(printf '%s round %d pp%-6s %-10s %-18s /%s %s  /llama.cpp %s' "$tag" "$round" "$t" "$n" "$v" "$first" \
          "$(ratio "$v" "$b")" "$(ratio "$v" "$pr")")"
      done
      [ -n "$pr" ] && row "$(printf '%s round %d pp%-6s %-10s %s' "$tag" "$round" "$t" llama.cpp "$pr")"
    done
  done
  [ "${STRATA_FORMS_IDS:-1}" = 1 ] || return 0
  for it in "${items[@]}"; do
    n="${it%%:*}"
    # shellcheck disable=SC2046
    env $(form_env "$it") strata run --model "$model" --backend cuda $(form_opts "$it") --temperature 0 -n 16 --json \
      --prompt "$(printf 'The forms agree %.0s' $(seq 1 40))" > "$OUT/$tag-ids-$n.txt" 2> "$OUT/$tag-ids-$n.log"
    if cmp -s "$OUT/$tag-ids-$first.txt" "$OUT/$tag-ids-$n.txt" && [ -s "$OUT/$tag-ids-$n.txt" ]; then
      row "$tag: 16 greedy ids of a 40-phrase prompt, $n: the same as $first"
    else
      row "$tag: 16 greedy ids of a 40-phrase prompt, $n: DIFFER or missing ($tag-ids-*.txt)"
    fi
  done
}

if want speculative; then
  # Issue 30 on the GPU. The ceiling (--draft-ceiling: drafts are the model's own greedy continuation, so every
  # window of n_max + 1 tokens is accepted whole): a window's cost against one token's is (n_max + 1) x greedy t/s /
  # ceiling t/s; all in VRAM and at 25%. Then real acceptance on trained weights on cuda: stories260K-moe with ngram
  # and with stories260K as its draft, on the story that repeats itself (docs/PERFORMANCE.md, issue 30's section).
  # STRATA_SPEC_CEILING=0 leaves the ceiling runs out, STRATA_SPEC_STORIES=0 the stories260K ones.
  for budget in $([ "${STRATA_SPEC_CEILING:-1}" = 1 ] && echo auto 25%); do
    for n in 1 3 4 7; do
      tag="spec-${budget%\%}-n$n"
      strata bench --model "$model" --backend cuda -o experts.cache="$budget" -p 0 -n 64 -r 2 --draft-ceiling \
        -o speculative.n_max=$n > "$OUT/$tag.md" 2> "$OUT/$tag.log"
      rc=$?
      row "$(printf 'speculative ceiling cache %-4s n_max %d (exit %d): %s | %s' "$budget" "$n" "$rc" \
        "$(grep -E '^\| .*tg64 greedy' "$OUT/$tag.md" | awk -F'|' '{print "greedy " $(NF-2)}' | tr -s ' ')" \
        "$(grep -E 'drafted' "$OUT/$tag.log" | tail -1 | cut -c1-150)")"
    done
  done
  # Where a window's time goes, op by op, for windows of 1, 4, 5 and 8 tokens all in VRAM (5-token windows, n_max
  # 4, cost more a token than 4- and 8-token ones in two leases): each table's four largest rows here, the whole
  # tables in the log.
  strata bench --model "$model" --backend cuda -p 0 -n 1 -r 1 --profile-window 1,4,5,8 \
    > "$OUT/spec-window-profile.md" 2> "$OUT/spec-window-profile.log"
  rc=$?
  for k in 1 4 5 8; do
    awk -v k="$k" '/^window profile/ { on = ($6 == k) } on' "$OUT/spec-window-profile.log" > "$OUT/spec-window-$k.log"
    row "speculative window profile, $k tokens (exit $rc): $(grep -E 'all ops' "$OUT/spec-window-$k.log" | awk -F'|' '{print $5 " ms a window; "}')$(top_ops "$OUT/spec-window-$k.log")"
  done
  story="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big red ball. Once upon a time, there was a little girl named Lily. She loved to play outside"
  for d in $([ "${STRATA_SPEC_STORIES:-1}" = 1 ] && echo ngram model); do
    extra=(-o speculative.draft=$d)
    [ "$d" = model ] && extra+=(-o speculative.model="$root/models/stories260K.gguf" -o speculative.backend=launch)
    strata bench --model "$root/models/stories260K-moe.gguf" --backend cuda -p 0 -n 200 -r 3 --prompt "$story" \
      "${extra[@]}" > "$OUT/spec-stories-$d.md" 2> "$OUT/spec-stories-$d.log"
    row "speculative stories260K-moe on cuda, $d draft (exit $?): $(grep -E 'drafted' "$OUT/spec-stories-$d.log" | tail -1 | cut -c1-160)"
  done
fi

if want hybrid; then
  for budget in ${STRATA_HYBRID_BUDGETS:-25%}; do
    [ "$budget" = "-" ] && continue
    tag="${budget%\%}"
    log "strata bench, cuda, hybrid experts.cache=$budget"
    strata_hybrid "bench-hybrid-$tag" "$budget" -p 512 -n 128 -r "$reps"
    rc=$?
    cat "$OUT/bench-hybrid-$tag.md"
    grep -E 'pcie_frac|hit rate|host placement|fast mode|simple mode|prompt path|experts per token' "$OUT/bench-hybrid-$tag.log" | head -12
    row "strata hybrid cache $budget ${skew:+($skew) }(exit $rc): $(grep -oE 'pcie_frac [0-9.]+' "$OUT/bench-hybrid-$tag.log" | head -1); tg: $(grep -A3 'during tg' "$OUT/bench-hybrid-$tag.log" | grep -oE '[0-9.]+% hits' | head -1); $(grep -oE '[0-9.]+ tokens/s at most' "$OUT/bench-hybrid-$tag.log" | tail -1)"
    while IFS= read -r l; do row "  $l"; done < <(grep -E 'pp|tg' "$OUT/bench-hybrid-$tag.md")
  done
  first="$(echo "${STRATA_HYBRID_BUDGETS:-25%}" | awk '{print $1}')"
  if [ "${STRATA_HYBRID_SIMPLE:-0}" = 1 ]; then
    log "strata bench, cuda, hybrid experts.cache=$first, simple mode (runtime.graphs=false)"
    strata_hybrid bench-hybrid-simple "$first" -o runtime.graphs=false -p 512 -n 128 -r "$reps"
    rc=$?
    cat "$OUT/bench-hybrid-simple.md"
    row "strata hybrid cache $first, simple mode (exit $rc):"
    while IFS= read -r l; do row "  $l"; done < <(grep -E 'pp|tg' "$OUT/bench-hybrid-simple.md")
  fi
  if [ "${STRATA_HYBRID_POOL:-1}" = 1 ]; then
  log "strata bench, cuda, hybrid experts.cache=$first, pool alone (pcie_frac 0)"
  strata_hybrid bench-hybrid-pool "$first" -o experts.pcie_frac=0 -p 512 -n 128 -r "$reps"
  rc=$?
  cat "$OUT/bench-hybrid-pool.md"
  row "strata hybrid cache $first, pool alone (exit $rc):"
  while IFS= read -r l; do row "  $l"; done < <(grep -E 'pp|tg' "$OUT/bench-hybrid-pool.md")
  fi
fi
if want canon-cost; then
  # What the canonical float rules cost: tg128 and pp512 with the canonical plugins and with the non-canonical build's
  # (device-pack.sh with STRATA_PACK_NONCANONICAL=1), in STRATA_COST_PAIRS pairs (default 2, every other one in the
  # other order): the hybrid engine at 25% (pcie_frac from the link probe) and the CPU engine (cpu_avx2, all cores).
  nc="$root/.device/noncanonical"
  if [ ! -f "$nc/libstrata-cuda.so" ]; then
    row "canon-cost: no non-canonical plugins in $nc (STRATA_PACK_NONCANONICAL=1 scripts/device-pack.sh)"
  else
    for pair in $(seq 1 "${STRATA_COST_PAIRS:-2}"); do
      order="canonical noncanonical"
      [ $((pair % 2)) = 0 ] && order="noncanonical canonical"  # every other pair the other way round
      for build in $order; do
        path=""
        [ "$build" = noncanonical ] && path="$nc"
        for engine in hybrid cpu; do
          opts=(--backend cuda -o experts.cache=25%)
          [ "$engine" = cpu ] && opts=(--backend cpu_avx2 -o plugins.cpu_avx2.workers=$((threads - 1)))
          f="$OUT/cost-$engine-$build-$pair"
          log "canon-cost pair $pair: $engine, $build plugins"
          STRATA_PLUGIN_PATH="$path" strata bench --model "$model" "${opts[@]}" -p 512 -n 128 -r "$reps" > "$f.md" 2> "$f.log"
          rc=$?
          cat "$f.md"
          grep -m1 -oE 'cuda \(.*\)|cpu_avx2 \(.*\)' "$f.log" | head -1
          row "cost pair $pair $engine $build (exit $rc): tg128 $(grep -E 'tg128' "$f.md" | awk -F'|' '{print $(NF-2)}' | xargs), pp512 $(grep -E 'pp512' "$f.md" | awk -F'|' '{print $(NF-2)}' | xargs)"
        done
      done
    done
  fi
fi
if want slots; then
  # runtime.slots on the GPU: EngineSlots.* (two or three sequences together equal each alone, every backend, cuda
  # included), then tg64 of one sequence against two at once (--slots 2) on the hybrid path at 25% and all-GPU.
  log "slots: EngineSlots on every backend; bench --slots 2"
  strata_tests --gtest_brief=1 --gtest_filter='EngineSlots.*' > "$OUT/slots-tests.txt" 2>&1
  row "EngineSlots (cuda included): exit $?, $(grep -E 'PASSED|FAILED' "$OUT/slots-tests.txt" | head -2 | tr '\n' ' ')"
  for where in "hybrid-25:-o experts.cache=25%" "all-gpu:-o experts.cache=auto"; do
    name="${where%%:*}"
    for n in 1 2; do
      f="$OUT/slots-$name-$n"
      strata bench --model "$model" --backend cuda ${where#*:} --slots "$n" -p 0 -n 64 -r "$reps" > "$f.md" 2> "$f.log"
      rc=$?
      row "bench $name --slots $n (exit $rc): $(grep -E '\| tg64' "$f.md" | awk -F'|' '{print $7, "aggregate;", $9, "per slot"}' | xargs)"
    done
  done
fi
if want balance; then
  # plugins/pcie_balance against the link probe's share, off then on in pairs (STRATA_BALANCE_PAIRS, default 2), for
  # the pools of STRATA_BALANCE_POOLS (slow: one AVX2 worker, no host worker; all: the defaults); tg128 at 25%.
  slow_pool="-o plugins.cpu_avx2.workers=1 -o plugins.cpu_avx2.force_avx2=true -o plugins.cpu_avx2.host_worker=false"
  for pool in ${STRATA_BALANCE_POOLS:-slow all}; do
    pool_opts=""
    [ "$pool" = slow ] && pool_opts="$slow_pool"
    for pair in $(seq 1 "${STRATA_BALANCE_PAIRS:-2}"); do
      for sw in off on; do
        sw_opts=""
        [ "$sw" = on ] && sw_opts="-o plugins.pcie_balance.enabled=true"
        f="$OUT/balance-$pool-$pair-$sw"
        log "pcie_balance $sw, $pool pool, pair $pair"
        strata bench --model "$model" --backend cuda -o experts.cache=25% $pool_opts $sw_opts -p 0 -n 128 -r 2 \
          > "$f.md" 2> "$f.log"
        rc=$?
        grep -E 'pcie_balance:|m [0-9.]+ of|device stamps|pcie_frac [0-9.]+ from' "$f.log" | tail -4
        row "balance $pool pair $pair $sw (exit $rc): $(grep -E 'tg' "$f.md" | awk -F'|' '{print $(NF-1)}' | tr -s ' ')"
      done
    done
  done
fi

# The port a `strata serve` (PID, its stderr in LOG) listens on, once it says so (empty if it ends or 2 min pass).
listening_port() {  # LOG PID
  local port=""
  for _ in $(seq 1 240); do
    port="$(grep -oE 'listening on http://[^:]+:[0-9]+' "$1" | grep -oE '[0-9]+$' || true)"
    [ -n "$port" ] && break
    kill -0 "$2" 2>/dev/null || break
    sleep 0.5
  done
  echo "$port"
}
if want serve; then
  # strata serve on the hybrid path (25%): a chat completion, then a request with its own pcie_frac, then /live and
  # /metrics (the page's heatmap of routes and cache hits). curl, or python3 where the machine has no curl.
  log "strata serve, cuda, hybrid experts.cache=25%"
  http() {  # METHOD URL [BODY]
    if command -v curl >/dev/null; then
      if [ $# -ge 3 ]; then curl -s -X "$1" -H 'Content-Type: application/json' -d "$3" "$2"; else curl -s "$2"; fi
    else
      python3 -c 'import sys,urllib.request as u; d=sys.argv[3].encode() if len(sys.argv)>3 else None; r=u.Request(sys.argv[2],data=d,method=sys.argv[1],headers={"Content-Type":"application/json"}); print(u.urlopen(r,timeout=120).read().decode())' "$@"
    fi
  }
  strata serve --model "$model" --backend cuda -o experts.cache=25% -o plugins.pcie_balance.enabled=true \
    --port 0 > "$OUT/serve.out" 2> "$OUT/serve.log" &
  serve_pid=$!
  port="$(listening_port "$OUT/serve.log" "$serve_pid")"
  if [ -n "$port" ]; then
    base="http://127.0.0.1:$port"
    chat='{"messages":[{"role":"user","content":"Write a short story about a fox."}],"max_tokens":64,"temperature":0}'
    http POST "$base/v1/chat/completions" "$chat" > "$OUT/serve-chat1.json"
    http POST "$base/v1/chat/completions" "$chat" > "$OUT/serve-chat2.json"
    own='{"messages":[{"role":"user","content":"Write a short story about a fox."}],"max_tokens":64,"temperature":0,"pcie_frac":1.0}'
    http POST "$base/v1/chat/completions" "$own" > "$OUT/serve-chat3.json"
    http GET "$base/live" > "$OUT/serve-live.json"
    http GET "$base/metrics" > "$OUT/serve-metrics.txt"
    row "serve: chat 1 usage $(grep -oE '"usage":\{[^}]*\}' "$OUT/serve-chat1.json" | head -1)"
    row "serve: chat 2 cached $(grep -oE '"cached_tokens":[0-9]+' "$OUT/serve-chat2.json"); same text as 1: $(python3 -c 'import json,sys; a,b,c=(json.load(open(f))["choices"][0]["message"]["content"] for f in sys.argv[1:]); print(a==b, "; with pcie_frac 1.0 the same:", a==c)' "$OUT/serve-chat1.json" "$OUT/serve-chat2.json" "$OUT/serve-chat3.json" 2>&1)"
    row "serve: $(grep -E '^strata_expert_cache_hit_rate|^strata_requests_total' "$OUT/serve-metrics.txt" | head -3 | tr '\n' ' ')"
    row "serve: /live hits present: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); e=d["expert"]; print(e["hits"] is not None, e["n_layer"], "x", e["n_expert"])' "$OUT/serve-live.json" 2>&1)"
  else
    row "serve: did not start (see serve.log)"
  fi
  kill -TERM "$serve_pid" 2>/dev/null
  wait "$serve_pid"
  row "serve: exit $? after SIGTERM"
  tail -5 "$OUT/serve.log"
fi

if want gate; then
  # Issue 9's matrix: every placement, share, swap, balancer, graph and CPU-path setting against one all-GPU run.
  log "strata gate: the placement matrix against the all-GPU run (configs/gate-cuda.yaml, n 32)"
  g="strata gate --config $root/configs/gate-cuda.yaml --model $model -o sampling.n_predict=32"
  : > "$OUT/gate.log"
  set_="${STRATA_GATE_SET:-all}"  # gpu, cpu or all: the GPU lines, the CPU lines, or both (two calls fit better)
  # The GPU lines run in the GPU's default arithmetic (float, tensor-core attention: issue 28) unless
  # STRATA_GATE_ARITH=double (configs/gate-cuda.yaml's canonical_double, the CPU engine's bits); the CPU lines
  # compare the CPU engine with the GPU, so they always take the double path.
  g_cpu="$g"
  [ "${STRATA_GATE_ARITH:-float}" = double ] || g="$g -o runtime.canonical_double=false"
  if [ "$set_" != cpu ]; then
    gate_run all-gpu save -o experts.cache=auto
    gate_run all-gpu-no-graphs all-gpu -o experts.cache=auto -o plugins.cuda.graphs=false
    gate_run hybrid-100 all-gpu -o experts.cache=100%
    gate_run hybrid-25-pcie-0 all-gpu -o experts.cache=25% -o experts.pcie_frac=0
    gate_run hybrid-25-pcie-0.5 all-gpu -o experts.cache=25% -o experts.pcie_frac=0.5
    gate_run hybrid-25-pcie-1 all-gpu -o experts.cache=25% -o experts.pcie_frac=1
    gate_run hybrid-0-pcie-0 all-gpu -o experts.cache=0% -o experts.pcie_frac=0
    gate_run hybrid-0-pcie-0.5 all-gpu -o experts.cache=0% -o experts.pcie_frac=0.5
    gate_run hybrid-25-swaps-4 all-gpu -o experts.cache=25% -o experts.pcie_frac=0.5 -o experts.adapt_swaps=4
    gate_run hybrid-25-balancer all-gpu -o experts.cache=25% -o experts.pcie_frac=auto -o plugins.pcie_balance.enabled=true
    gate_run hybrid-25-simple all-gpu -o experts.cache=25% -o experts.pcie_frac=0.5 -o runtime.graphs=false
    gate_run hybrid-25-simple-no-cuda-graphs all-gpu -o experts.cache=25% -o experts.pcie_frac=0.5 -o runtime.graphs=false -o plugins.cuda.graphs=false
  fi
  g="$g_cpu"
  if [ "$set_" != gpu ]; then
    # The CPU engine (cpu_avx2, all cores) at a 1024-token context, so that the long prompt's prefill (cut to 992
    # tokens) takes seconds, not minutes: the all-GPU run saved at that context; cpu_avx2's AVX-512 path checked
    # against it and saved; its AVX2 path (force_avx2) checked against the AVX-512 run.
    gate_run all-gpu-ctx1k save -o experts.cache=auto -o runtime.context=1024
    gate_run cpu-avx512-vs-all-gpu all-gpu-ctx1k -o backend=cpu_avx2 -o runtime.context=1024
    gate_run cpu-avx512 save -o backend=cpu_avx2 -o runtime.context=1024
    gate_run cpu-force-avx2 cpu-avx512 -o backend=cpu_avx2 -o runtime.context=1024 -o plugins.cpu_avx2.force_avx2=true
  fi
fi
if want twocard; then
  # Issue 10's second card on the one-GPU machine: the peer tier on a second logical device of GPU 0, so that every
  # path (dealing, the peer's rows out, src3 in decode and prompt windows, programs and simple mode) runs on CUDA.
  # The second card: STRATA_PEER_DEVICE (default 0, a second logical device on GPU 0; 1 on a two-GPU machine).
  peer_dev="${STRATA_PEER_DEVICE:-0}"
  log "two cards: runtime.peer_device=$peer_dev gates and bench"
  # Each line under a deadline: two logical devices on one GPU must never wait on each other, and if they did, the
  # rest of the call still runs.
  g="timeout 150 strata gate --config $root/configs/gate-cuda.yaml --model $model -o sampling.n_predict=32"
  [ -f "$OUT/gate.log" ] || : > "$OUT/gate.log"
  [ -f "$OUT/gate-all-gpu.json" ] || gate_run all-gpu save -o experts.cache=auto
  p=(-o experts.cache=25% -o runtime.peer_device=$peer_dev)
  gate_run peer-25-pcie-0 all-gpu "${p[@]}" -o experts.pcie_frac=0
  gate_run peer-25-pcie-0.5 all-gpu "${p[@]}" -o experts.pcie_frac=0.5
  gate_run peer-25-pcie-1 all-gpu "${p[@]}" -o experts.pcie_frac=1
  gate_run peer-25-hot-1 all-gpu "${p[@]}" -o experts.pcie_frac=0.5 -o experts.peer_hot=1
  gate_run peer-25-simple all-gpu "${p[@]}" -o experts.pcie_frac=0.5 -o runtime.graphs=false
  gate_run peer-25-swaps-4 all-gpu "${p[@]}" -o experts.pcie_frac=0.5 -o experts.adapt_swaps=4
  k="${STRATA_SPLIT:-24}"
  s=(-o runtime.peer_device=$peer_dev -o runtime.layer_split="$k")
  gate_run "split-$k-all-weights" all-gpu "${s[@]}" -o experts.cache=auto
  gate_run "split-$k-25-pcie-0.5" all-gpu "${s[@]}" -o experts.cache=25% -o experts.pcie_frac=0.5
  gate_run "split-$k-25-simple" all-gpu "${s[@]}" -o experts.cache=25% -o experts.pcie_frac=0.5 -o runtime.graphs=false
  for where in "one-card:-o runtime.peer_device=-1" "peer:-o runtime.peer_device=$peer_dev" "split-$k:${s[*]}"; do
    name="${where%%:*}"
    f="$OUT/twocard-bench-$name"
    strata bench --model "$model" --backend cuda -o experts.cache=25% ${where#*:} -p 512 -n 128 -r "$reps" > "$f.md" 2> "$f.log"
    rc=$?
    cat "$f.md"
    row "bench 25% $name (exit $rc): tg128 $(grep -E 'tg128' "$f.md" | awk -F'|' '{print $(NF-2)}' | xargs), pp512 $(grep -E 'pp512' "$f.md" | awk -F'|' '{print $(NF-2)}' | xargs)"
    # The peer's line of each test's expert summary (pp512 first, then tg128).
    while IFS= read -r l; do row "  $l"; done < <(grep -E '^peer card: [0-9]' "$f.log")
  done
  # strata engine with the peer tier: PEER_DETACH and POOL_HOLD 4 sent while a request runs (answered between its
  # windows: the peer's slots freed on the device), PEER_ATTACH and POOL_HOLD 0 after it, then the same request
  # again; both done lines must carry the ids of a one-card `strata run`.
  f="$OUT/twocard-engine"
  req='{"id":ID,"prompt":"Once upon a time","max_tokens":64,"temperature":0,"stream":false}'
  want="$(strata run --model "$model" --backend cuda -o experts.cache=25% --prompt "Once upon a time" -n 64 \
    --temperature 0 --json 2> "$f-run.log" | grep -oE '"generated_ids":\[[0-9,]*\]')"
  { echo "${req/ID/1}"; sleep 1; printf 'PEER_DETACH\nPOOL_HOLD 4\n'; sleep 4; printf 'PEER_ATTACH\nPOOL_HOLD 0\n'
    echo "${req/ID/2}"; } | timeout 120 strata engine --model "$model" -o backend=cuda -o experts.cache=25% \
    -o runtime.peer_device=$peer_dev > "$f.out" 2> "$f.log"
  rc=$?
  same=0
  for id in 1 2; do grep -F "$want,\"id\":$id," "$f.out" > /dev/null && same=$((same + 1)); done
  row "strata engine with the peer (exit $rc): $same of 2 requests' ids equal one card's; $(grep -c '^CTL .* done' "$f.out") of 4 controls done"
  while IFS= read -r l; do row "  ${l:0:150}"; done < <(grep '^CTL' "$f.out")
  for n in 1 2; do
    f="$OUT/twocard-split-slots-$n"
    strata bench --model "$model" --backend cuda -o experts.cache=25% "${s[@]}" --slots "$n" -p 0 -n 64 -r "$reps" > "$f.md" 2> "$f.log"
    rc=$?
    row "bench 25% split-$k --slots $n (exit $rc): $(grep -E '\| tg64' "$f.md" | awk -F'|' '{print $7, "aggregate;", $9, "per slot"}' | xargs)"
  done
fi
if want peerlink; then
  # Two `strata engine` processes joined by the peer link (plugins/peerlink), both on GPU 0 (two logical cards), each
  # with a 25% cache holding its role's share of the dealt experts, both serving (LINK_SERVE 1). Role 0 runs a
  # request; role 1 runs one at the same time; then role 0 runs a long one during which role 1 is killed (SIGKILL).
  # Every request's ids must equal a one-card `strata run`'s.
  log "peer link: two engine processes on GPU 0"
  link_file=/dev/shm/strata-check.link
  rm -f "$link_file"
  f="$OUT/link"
  # One host copy of the experts for both: role 1 fills the tmpfs file, role 0 maps it.
  e=(strata engine --model "$model" -o backend=cuda -o experts.cache=25% -o experts.arena=/dev/shm/strata-check.arena
     --peer-link "$link_file")
  want64="$(strata run --model "$model" --backend cuda -o experts.cache=25% --prompt "Once upon a time" -n 64 \
    --temperature 0 --json 2> "$f-run64.log" | grep -oE '"generated_ids":\[[0-9,]*\]')"
  want400="$(strata run --model "$model" --backend cuda -o experts.cache=25% --prompt "The history of the river" -n 400 \
    --temperature 0 --json 2> "$f-run400.log" | grep -oE '"generated_ids":\[[0-9,]*\]')"
  rm -f "$f-0.fifo" "$f-1.fifo" && mkfifo "$f-0.fifo" "$f-1.fifo"
  "${e[@]}" --peer-link-role 1 < "$f-1.fifo" > "$f-1.out" 2> "$f-1.log" &
  pid1=$!
  exec 7> "$f-1.fifo"
  timeout 300 "${e[@]}" --peer-link-role 0 < "$f-0.fifo" > "$f-0.out" 2> "$f-0.log" &
  pid0=$!
  exec 8> "$f-0.fifo"
  req='{"id":ID,"prompt":"PROMPT","max_tokens":N,"temperature":0,"stream":false}'
  r64="${req/PROMPT/Once upon a time}"; r64="${r64/N/64}"
  r400="${req/PROMPT/The history of the river}"; r400="${r400/N/400}"
  for i in $(seq 1 240); do grep -q '"event"' "$f-1.out" 2> /dev/null && grep -q '"event"' "$f-0.out" 2> /dev/null && break; sleep 0.5; done
  echo "LINK_SERVE 1" >&7
  echo "LINK_SERVE 1" >&8
  sleep 0.5
  echo "${r64/ID/1}" >&8
  echo "${r64/ID/11}" >&7  # role 1's own request, at the same time
  for i in $(seq 1 300); do grep -q '"id":1,' "$f-0.out" 2> /dev/null && grep -q '"id":11,' "$f-1.out" 2> /dev/null && break; sleep 0.1; done
  # Role 1 dies while role 0 runs its 400-token request.
  echo "${r400/ID/2}" >&8
  sleep 1.5
  kill -9 "$pid1" 2> /dev/null
  exec 7>&-
  for i in $(seq 1 900); do grep -q '"id":2,' "$f-0.out" 2> /dev/null && break; sleep 0.1; done
  exec 8>&-  # role 0 ends at the end of its input, printing its summary
  wait "$pid0" 2> /dev/null; wait "$pid1" 2> /dev/null
  ok() { grep -F "$1,\"id\":$2," "$3" > /dev/null && echo same || echo DIFFERENT; }
  row "peer link: role 0 request 1 (64 tokens, both serving): ids $(ok "$want64" 1 "$f-0.out") as one card"
  row "peer link: role 1 request 11 (64 tokens, at the same time): ids $(ok "$want64" 11 "$f-1.out") as one card"
  row "peer link: role 0 request 2 (400 tokens, role 1 killed during it): ids $(ok "$want400" 2 "$f-0.out") as one card"
  for r in 0 1; do row "  role $r arena: $(grep -oE 'experts in RAM: [^;]*' "$f-$r.log" | head -1)"; done
  while IFS= read -r l; do row "  role 0: ${l:0:160}"; done < <(grep -E '^peer link|^CTL|warning: peer link' "$f-0.log" "$f-0.out" | cut -d: -f2-)
  while IFS= read -r l; do row "  role 1: ${l:0:160}"; done < <(grep -E '^peer link|^CTL' "$f-1.log" "$f-1.out" | cut -d: -f2-)
  rm -f "$link_file" "$f-0.fifo" "$f-1.fifo" /dev/shm/strata-check.arena
fi
if want desk; then
  # strata serve with serve.elastic.lanes 2 on GPU 0: the lead (25%, its peer tier a second logical device, the
  # peer link) and the helper woken for a second request; scripts/desk_client.py drives it (see its header).
  log "the elastic desk: strata serve, two engine lanes on GPU 0"
  rm -f /dev/shm/strata-desk.arena
  strata serve --model "$model" --backend cuda -o experts.cache=25% -o experts.arena=/dev/shm/strata-desk.arena \
    -o runtime.peer_device=0 -o serve.elastic.lanes=2 -o serve.elastic.hold_s=4 --port 0 \
    > "$OUT/desk.out" 2> "$OUT/desk.log" &
  desk_pid=$!
  port="$(listening_port "$OUT/desk.log" "$desk_pid")"
  if [ -n "$port" ]; then
    timeout 300 python3 "$root/scripts/desk_client.py" "http://127.0.0.1:$port" 4 > "$OUT/desk-client.txt" 2>&1
    while IFS= read -r l; do row "${l:0:220}"; done < "$OUT/desk-client.txt"
  else
    row "desk: strata serve did not start (see desk.log)"
  fi
  kill -TERM "$desk_pid" 2>/dev/null
  wait "$desk_pid"
  row "desk: exit $? after SIGTERM"
  while IFS= read -r l; do row "  ${l:0:200}"; done < <(grep -E 'woke in|sleeps after|died|lane is ready' "$OUT/desk.log")
  rm -f /dev/shm/strata-desk.arena
fi
if want peer-hybrid; then
  for ncmoe in ${STRATA_PEER_NCMOE:-36}; do
  if [ -x "$peer" ]; then
    log "llama.cpp llama-bench -ngl 99 -fa on --n-cpu-moe $ncmoe -t $threads"
    peer_hybrid "bench-peer-hybrid-$ncmoe" "$ncmoe" "$threads" -p 512 -n 128 -r "$reps"
    rc=$?
    cat "$OUT/bench-peer-hybrid-$ncmoe.md"
    row "llama.cpp -ngl 99 -ncmoe $ncmoe ${skew:+($skew) }(exit $rc):"
    while IFS= read -r l; do row "  $l"; done < <(grep -E 'pp|tg' "$OUT/bench-peer-hybrid-$ncmoe.md")
  else
    row "llama.cpp hybrid: no binary at $peer"
  fi
  done
fi
if want peer-cuda; then
  if [ ! -x "$peer" ]; then
    row "llama.cpp CUDA: no binary at $peer (build one from a fetched copy; set STRATA_PEER_CUDA)"
  fi
  if [ -x "$peer" ]; then
    log "llama.cpp llama-bench -ngl 99 -fa on"
    "$peer" -m "$model" -p 512 -n 128 -r "$reps" -ngl 99 -fa on > "$OUT/bench-peer-cuda.md" 2> "$OUT/bench-peer-cuda.log"
    rc=$?
    cat "$OUT/bench-peer-cuda.md"
    row "llama.cpp -ngl 99 (exit $rc):"
    while IFS= read -r l; do row "  $l"; done < <(grep -E 'pp|tg' "$OUT/bench-peer-cuda.md")
  fi
fi

if want long; then
  # Issue 28's targets, Strata then llama.cpp in each of STRATA_LONG_ROUNDS (default 1) rounds, the same file: all
  # in VRAM pp512, pp16384 and tg64 at depth 16384 (-ngl 99 -fa on); at 25% against -ncmoe 36 pp16384 and tg64 at
  # depth 16384; then (STRATA_LONG_DEEP=1, the default) tg64 at depth 131072 with q8_0 KV against -ctk/-ctv q8_0,
  # -r 1. STRATA_LONG_PEER=0 leaves llama.cpp out. Times on the H100 (2026-12-06): a round all in VRAM about 40 s
  # with the peer, the depth-131072 row about 175 s (Strata's 131K-token prefill 117 s, llama.cpp's run 45 s).
  ctx16=$((16384 + 1024))
  long_peer() { [ "${STRATA_LONG_PEER:-1}" = 1 ] && [ -x "$peer" ]; }
  long_pair() {  # long_pair LABEL TEST STRATA-TAG PEER-TAG
    local s p
    s="$(tg_of "$OUT/$3.md" "$2")"
    p="$(tg_of "$OUT/$4.md" "$2" 2>/dev/null)"
    row "$(printf '%-34s %-16s strata %-18s llama.cpp %-18s ratio %s' "$1" "$2" "$s" "${p:--}" "$(ratio "$s" "$p")")"
  }
  for round in $(seq 1 "${STRATA_LONG_ROUNDS:-1}"); do
    log "long round $round: strata, every weight in VRAM"
    strata bench --model "$model" --backend cuda -o runtime.context=$ctx16 -p 512,16384 -n 0 -r 1 \
      > "$OUT/long$round-s-pp.md" 2> "$OUT/long$round-s-pp.log"
    strata bench --model "$model" --backend cuda -o runtime.context=$ctx16 -p 0 -n 64 -d 16384 -r 2 \
      > "$OUT/long$round-s-tg.md" 2> "$OUT/long$round-s-tg.log"
    cat "$OUT/long$round-s-pp.md" "$OUT/long$round-s-tg.md"
    if long_peer; then
      log "long round $round: llama.cpp -ngl 99 -fa on"
      "$peer" -m "$model" -ngl 99 -fa on -p 512,16384 -n 0 -r 1 > "$OUT/long$round-p-pp.md" 2> "$OUT/long$round-p-pp.log"
      "$peer" -m "$model" -ngl 99 -fa on -p 0 -n 64 -d 16384 -r 2 > "$OUT/long$round-p-tg.md" 2> "$OUT/long$round-p-tg.log"
      cat "$OUT/long$round-p-pp.md" "$OUT/long$round-p-tg.md"
    fi
    long_pair "round $round, all in VRAM" pp512 "long$round-s-pp" "long$round-p-pp"
    long_pair "round $round, all in VRAM" pp16384 "long$round-s-pp" "long$round-p-pp"
    long_pair "round $round, all in VRAM" "tg64 @ d16384" "long$round-s-tg" "long$round-p-tg"
    # Strata's own wider prompt windows all in VRAM (STRATA_LONG_VRAM_BATCHES, default none): what a larger
    # runtime.batch default would cost or give where no expert crosses PCIe.
    for b in ${STRATA_LONG_VRAM_BATCHES-}; do
      strata bench --model "$model" --backend cuda -o runtime.context=$ctx16 -o runtime.batch=$b -p 512,16384 -n 0 -r 1 \
        > "$OUT/long$round-s-pp-b$b.md" 2> "$OUT/long$round-s-pp-b$b.log"
      cat "$OUT/long$round-s-pp-b$b.md"
      long_pair "round $round, all in VRAM, window $b" pp512 "long$round-s-pp-b$b" "long$round-p-pp"
      long_pair "round $round, all in VRAM, window $b" pp16384 "long$round-s-pp-b$b" "long$round-p-pp"
    done
    if [ "${STRATA_LONG_HYBRID:-1}" = 1 ]; then
      log "long round $round: strata at 25%"
      strata_hybrid "long$round-s25-pp" 25% -o runtime.context=$ctx16 -p 16384 -n 0 -r 1
      strata_hybrid "long$round-s25-tg" 25% -o runtime.context=$ctx16 -p 0 -n 64 -d 16384 -r 2
      cat "$OUT/long$round-s25-pp.md" "$OUT/long$round-s25-tg.md"
      if long_peer; then
        log "long round $round: llama.cpp -ncmoe 36"
        peer_hybrid "long$round-p36-pp" 36 "$threads" -p 16384 -n 0 -r 1
        peer_hybrid "long$round-p36-tg" 36 "$threads" -p 0 -n 64 -d 16384 -r 2
        cat "$OUT/long$round-p36-pp.md" "$OUT/long$round-p36-tg.md"
      fi
      long_pair "round $round, 25% / -ncmoe 36" pp16384 "long$round-s25-pp" "long$round-p36-pp"
      long_pair "round $round, 25% / -ncmoe 36" "tg64 @ d16384" "long$round-s25-tg" "long$round-p36-tg"
      # The same decode at depth beside STRATA_LONG_BUSY (default 8; 0: not) busy nice-19 loops: the claims must
      # hold at long context on a machine that is not quiet (the contention step does it at depth 0).
      long_busy="${STRATA_LONG_BUSY:-8}"
      if [ "$long_busy" -gt 0 ]; then
        log "long round $round: tg64 at depth 16384, 25% / -ncmoe 36, beside $long_busy busy loops"
        busy_pids=()
        for _ in $(seq 1 "$long_busy"); do nice -n 19 sh -c 'while :; do :; done' & busy_pids+=($!); done
        strata_hybrid "long$round-busy-s25-tg" 25% -o runtime.context=$ctx16 -p 0 -n 64 -d 16384 -r 2
        long_peer && peer_hybrid "long$round-busy-p36-tg" 36 "$threads" -p 0 -n 64 -d 16384 -r 1
        kill "${busy_pids[@]}" 2>/dev/null
        wait "${busy_pids[@]}" 2>/dev/null
        cat "$OUT/long$round-busy-s25-tg.md" "$OUT/long$round-busy-p36-tg.md" 2>/dev/null
        long_pair "round $round, 25%, $long_busy busy loops" "tg64 @ d16384" "long$round-busy-s25-tg" "long$round-busy-p36-tg"
      fi
      # Wider prompt windows at 25%: each window moves the missed experts over PCIe once, so a window of B tokens
      # moves them 16384 / B times; the peer at the same width (-b B -ub B) beside it.
      for b in ${STRATA_LONG_BATCHES-2048}; do
        strata_hybrid "long$round-s25-pp-b$b" 25% -o runtime.context=$ctx16 -o runtime.batch=$b -p 16384 -n 0 -r 1
        cat "$OUT/long$round-s25-pp-b$b.md"
        if long_peer; then
          peer_hybrid "long$round-p36-pp-b$b" 36 "$threads" -b "$b" -ub "$b" -p 16384 -n 0 -r 1
          cat "$OUT/long$round-p36-pp-b$b.md"
        fi
        long_pair "round $round, 25% / -ncmoe 36, window $b" pp16384 "long$round-s25-pp-b$b" "long$round-p36-pp-b$b"
      done
    fi
  done
  if [ "${STRATA_LONG_PROFILE:-1}" = 1 ]; then
    # Where pp16384's time goes all in VRAM, op by op (its four largest rows; the whole table in the log).
    strata bench --model "$model" --backend cuda -o runtime.context=$ctx16 --profile-prompt 16384 \
      > "$OUT/long-profile.md" 2> "$OUT/long-profile.log"
    row "long: pp16384 profile (exit $?): $(top_ops "$OUT/long-profile.log")"
  fi
  if [ "${STRATA_LONG_DEEP:-1}" = 1 ]; then
    log "long: tg64 at depth 131072, q8_0 KV"
    strata bench --model "$model" --backend cuda -o runtime.context=$((131072 + 1024)) -o runtime.kv_type=q8_0 \
      -p 0 -n 64 -d 131072 -r 1 > "$OUT/long-s-deep.md" 2> "$OUT/long-s-deep.log"
    cat "$OUT/long-s-deep.md"
    if long_peer; then
      "$peer" -m "$model" -ngl 99 -fa on -ctk q8_0 -ctv q8_0 -p 0 -n 64 -d 131072 -r 1 > "$OUT/long-p-deep.md" 2> "$OUT/long-p-deep.log"
      cat "$OUT/long-p-deep.md"
    fi
    long_pair "q8_0 KV, all in VRAM" "tg64 @ d131072" long-s-deep long-p-deep
  fi
fi

if want forms; then
  # shellcheck disable=SC2086
  run_forms forms "${STRATA_FORMS_P:-16384}" "${STRATA_FORMS_ROUNDS:-2}" "${STRATA_FORMS_PEER:-1}" \
    ${STRATA_FORMS:-this baseline}
fi

if want context; then
  # Issue 28 item 5: the model's whole context, 262,144 tokens with a q8_0 KV cache, all on the card, then with the
  # GPU's memory capped at 24 GiB (the expert cache takes what the KV cache leaves: its line says how it split);
  # greedy ids of both equal; f16 KV under that cap is refused by name.
  log "context: 262144 tokens, q8_0 KV, all on the card and under a 24 GiB cap"
  ctx_prompt="The harbour master kept a ledger of every ship that came in, and on the first page he wrote"
  for tag in full cap24; do
    cap=(); [ "$tag" = cap24 ] && cap=(-o runtime.gpu_memory=24GiB -o experts.cache=auto)
    strata run --model "$model" --backend cuda -o runtime.context=262144 -o runtime.kv_type=q8_0 "${cap[@]}" \
      -p "$ctx_prompt" -n 32 --temperature 0 --json > "$OUT/context-$tag.txt" 2> "$OUT/context-$tag.log"
    row "context 262144 q8_0 $tag (exit $?): $(grep -iE 'experts.cache|KV cache' "$OUT/context-$tag.log" | head -2 | tr '\n' ' ')$(ready_of "$OUT/context-$tag.log")"
  done
  if cmp -s "$OUT/context-full.txt" "$OUT/context-cap24.txt"; then row "context: the two runs give the same ids"; else row "context: the two runs' ids DIFFER"; fi
  strata run --model "$model" --backend cuda -o runtime.context=262144 -o runtime.kv_type=f16 -o runtime.gpu_memory=24GiB \
    -o experts.cache=auto -p "$ctx_prompt" -n 4 --temperature 0 > /dev/null 2> "$OUT/context-f16-cap24.log"
  row "context 262144 f16 under 24 GiB (exit $?, expect non-zero): $(tail -1 "$OUT/context-f16-cap24.log" | cut -c1-200)"
fi

if want rounds; then
  # Strata and llama.cpp in interleaved rounds (Strata, llama.cpp, Strata, llama.cpp), STRATA_ROUNDS of them
  # (default 2): at a 25% expert budget against -ncmoe 36 and at 0% against -ncmoe 48, tg128, the same file.
  for round in $(seq 1 "${STRATA_ROUNDS:-2}"); do
    for pair in "25% 36" "0% 48"; do
      set -- $pair
      tag="${1%\%}"
      log "round $round: strata at $1, then llama.cpp -ncmoe $2 -t $threads"
      strata_hybrid "round$round-strata-$tag" "$1" -p 0 -n 128 -r "$reps"
      cat "$OUT/round$round-strata-$tag.md"
      grep -E 'CPU pool|pool read|host read' "$OUT/round$round-strata-$tag.log" | tail -3
      s_tg="$(tg_of "$OUT/round$round-strata-$tag.md" tg128)"
      p_tg="-"
      if [ -x "$peer" ]; then
        peer_hybrid "round$round-peer-$2" "$2" "$threads" -p 0 -n 128 -r "$reps"
        cat "$OUT/round$round-peer-$2.md"
        p_tg="$(tg_of "$OUT/round$round-peer-$2.md" tg128)"
      fi
      row "$(printf 'round %s: strata %-4s tg128 %-16s llama.cpp -ncmoe %s %-16s ratio %s' "$round" "$1" "$s_tg" "$2" "$p_tg" "$(ratio "$s_tg" "$p_tg")")"
      row "  $(grep -oE 'CPU pool: [^;]*(read|GB/s)[^;]*' "$OUT/round$round-strata-$tag.log" | tail -1)"
    done
  done
fi

if want contention; then
  # The same benches alone and beside STRATA_BUSY (default 8) busy `nice -n 19` loops: Strata at 25% (tg128, -r
  # $reps), llama.cpp at -ncmoe 36 with -t $threads and -t $((threads / 2)) (-n 32 -r 1: it is slow there).
  busy="${STRATA_BUSY:-8}"
  for phase in alone busy; do
    pids=()
    if [ "$phase" = busy ]; then
      for _ in $(seq 1 "$busy"); do nice -n 19 sh -c 'while :; do :; done' & pids+=($!); done
    fi
    log "contention ($phase): strata at 25%"
    strata_hybrid "contention-$phase-strata" 25% -p 0 -n 128 -r "$reps"
    cat "$OUT/contention-$phase-strata.md"
    if [ -x "$peer" ]; then
      for t in "$threads" $((threads / 2)); do
        log "contention ($phase): llama.cpp -ncmoe 36 -t $t"
        peer_hybrid "contention-$phase-peer-t$t" 36 "$t" -p 0 -n 32 -r 1
        cat "$OUT/contention-$phase-peer-t$t.md"
      done
    fi
    [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null && wait "${pids[@]}" 2>/dev/null
  done
  # llama.cpp at the faster of its two thread counts, in each phase.
  best_peer() {
    local best="-" v
    for t in "$threads" $((threads / 2)); do
      v="$(tg_of "$OUT/contention-$1-peer-t$t.md" tg32 2>/dev/null)"
      [ -n "$v" ] && { [ "$best" = "-" ] || awk -v a="${v%% *}" -v b="${best%% *}" 'BEGIN { exit !(a > b) }'; } && best="$v"
    done
    echo "$best"
  }
  sa="$(tg_of "$OUT/contention-alone-strata.md" tg128)" sb="$(tg_of "$OUT/contention-busy-strata.md" tg128)"
  pa="$(best_peer alone)" pb="$(best_peer busy)"
  row "contention, $busy busy nice-19 loops: strata 25% tg128 alone $sa, busy $sb (kept $(ratio "$sb" "$sa"))"
  row "  llama.cpp -ncmoe 36 (best of -t $threads/-t $((threads / 2)), tg32) alone $pa, busy $pb (kept $(ratio "$pb" "$pa")); strata/llama.cpp busy: $(ratio "$sb" "$pb")"
fi

if want hostcopy; then
  # Issue 29, items 1 and 2. The experts' host copy: the mapped file itself as the default takes it (auto: its
  # expert pages registered, since they fit in memory) against the filled arena, interleaved in
  # STRATA_HOSTCOPY_ROUNDS (default 2) rounds at 25% and 0% (tg64; the file within 5% of the arena is the target);
  # the file staged through the ring (experts.host_copy: file) once at 25%; each run's peak-RSS line (added RSS <=
  # 1.05 x (file + KV) + 1 GiB), at 100% too; the placement line of each (planning holds the copies' enqueue).
  # "small" is auto with experts.huge_pages=false: the file's expert pages mapped with 4 KiB entries. Each run
  # repeats tg64 STRATA_HOSTCOPY_REPS times (default 4: at 25% two repetitions spread +-15%, too wide for 5%).
  for round in $(seq 1 "${STRATA_HOSTCOPY_ROUNDS:-2}"); do
    for budget in 25% 0%; do
      for kind in auto small arena; do
        tag="hc$round-${budget%\%}-$kind"
        log "host copy round $round: $kind at $budget"
        if [ "$kind" = small ]; then opts=(-o experts.host_copy=auto -o experts.huge_pages=false)
        else opts=(-o experts.host_copy=$kind); fi
        strata_hybrid "$tag" "$budget" "${opts[@]}" -p 0 -n 64 -r "${STRATA_HOSTCOPY_REPS:-4}"
        row "$(printf 'host copy round %d %-4s %-6s tg64 %-16s added RSS %s of file+KV; %s' "$round" "$budget" "$kind" \
          "$(tg_of "$OUT/$tag.md" tg64)" "$(rss_of "$OUT/$tag.log")" "$(ready_of "$OUT/$tag.log")")"
        row "    $(grep -oE 'host placement [^;]*;[^,]*' "$OUT/$tag.log" | tail -1)"
      done
      row "$(printf '  round %d %-4s file (auto) / arena: %s; small pages / arena: %s' "$round" "$budget" \
        "$(ratio "$(tg_of "$OUT/hc$round-${budget%\%}-auto.md" tg64)" "$(tg_of "$OUT/hc$round-${budget%\%}-arena.md" tg64)")" \
        "$(ratio "$(tg_of "$OUT/hc$round-${budget%\%}-small.md" tg64)" "$(tg_of "$OUT/hc$round-${budget%\%}-arena.md" tg64)")")"
    done
  done
  row "  auto's set-up: $(grep -oE 'experts in RAM: [^;]*' "$OUT/hc1-25-auto.log" | head -1 | cut -c1-200)"
  for kind in auto small; do
    row "  $kind: $(grep -oE 'huge pages[^;]*' "$OUT/hc1-25-$kind.log" | head -1); $(grep -oE '[^;]* in 2 MiB page-table entries' "$OUT/hc1-25-$kind.log" | head -1)"
  done
  strata_hybrid hc-25-staged 25% -o experts.host_copy=file -p 0 -n 64 -r 2
  row "host copy file (staged through the ring) 25% (exit $?): tg64 $(tg_of "$OUT/hc-25-staged.md" tg64)"
  strata_hybrid hc-100-file 100% -p 0 -n 64 -r 2
  row "host copy file 100% (exit $?): tg64 $(tg_of "$OUT/hc-100-file.md" tg64), added RSS $(rss_of "$OUT/hc-100-file.log") of file+KV"
  for f in "$OUT"/hc*.log; do grep -H 'peak RSS' "$f"; done > "$OUT/hostcopy-rss.txt"
fi

if want start; then
  # Issue 29 item 5, the first minute: `strata run -n 1` all in VRAM and at 25% (its startup line and the process's
  # wall seconds) against llama.cpp on the same file: llama-completion's load time where it is bundled
  # (STRATA_PEER_CLI), else llama-bench's process with one prompt token and no warm-up, timed whole.
  peer_cli="${STRATA_PEER_CLI:-$(dirname "$peer")/llama-completion}"
  wall_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
  for round in 1 2; do
    for budget in auto 25%; do
      t0=$(date +%s.%N)
      strata run --model "$model" --backend cuda -o experts.cache=$budget -p "Once upon a time" -n 1 --temperature 0 \
        > "$OUT/start$round-strata-${budget%\%}.txt" 2> "$OUT/start$round-strata-${budget%\%}.log"
      rc=$?
      row "start round $round strata cache $budget (exit $rc, process $(wall_since "$t0") s): $(grep -oE 'startup: .*' "$OUT/start$round-strata-${budget%\%}.log" | head -1 | cut -c1-170)"
    done
    for ncmoe in 0 36; do
      t0=$(date +%s.%N)
      if [ -x "$peer_cli" ]; then
        "$peer_cli" -m "$model" -ngl 99 -fa on -ncmoe $ncmoe -t "$threads" -p "Once upon a time" -n 1 -no-cnv --temp 0 \
          < /dev/null > "$OUT/start$round-peer-$ncmoe.txt" 2> "$OUT/start$round-peer-$ncmoe.log"
        rc=$?
        row "start round $round llama-completion -ncmoe $ncmoe (exit $rc, process $(wall_since "$t0") s): $(grep -oE 'load time = +[0-9.]+ ms' "$OUT/start$round-peer-$ncmoe.log" | head -1)"
      elif [ -x "$peer" ]; then
        "$peer" -m "$model" -ngl 99 -fa on -ncmoe $ncmoe -t "$threads" -p 1 -n 0 -r 1 --no-warmup \
          > "$OUT/start$round-peer-$ncmoe.md" 2> "$OUT/start$round-peer-$ncmoe.log"
        rc=$?
        row "start round $round llama-bench -ncmoe $ncmoe -p 1 -n 0 --no-warmup (exit $rc, process $(wall_since "$t0") s)"
      fi
    done
  done
fi

if want warmstart; then
  # Issue 29 item 4: the first 64 tokens' hit rate at 25%, cold (a uniform fill) and from a routing profile that
  # `strata profile` records first (beside the model: experts.profile auto). Meaningful on a skewed router
  # (STRATA_ROUTER_SKEW=zipf:1.0 with the mkmodel step); on a uniform one a profile has nothing to find.
  warm_prompt="The lighthouse keeper counted the ships that passed, and each evening he wrote their names in a book"
  rm -f "${model%.gguf}.profile.json" "$model.profile.json"
  strata profile --model "$model" --backend cuda -o experts.cache=25% -n 16 > "$OUT/warm-profile.txt" 2> "$OUT/warm-profile.log"
  row "warm start: strata profile (exit $?): $(tail -1 "$OUT/warm-profile.log" | cut -c1-170)"
  for how in cold profile; do
    extra=(); [ "$how" = profile ] && extra=(-o experts.profile=auto)
    strata run --model "$model" --backend cuda -o experts.cache=25% -o experts.adapt_swaps=0 "${extra[@]}" -p "$warm_prompt" \
      -n 64 --temperature 0 --json > "$OUT/warm-$how.txt" 2> "$OUT/warm-$how.log"
    row "warm start $how (exit $?): $(grep -oE 'expert cache: [0-9]+ slots, [0-9.]+% hits \([0-9]+ of [0-9]+' "$OUT/warm-$how.log" | head -1); $(grep -oE 'first token at [0-9.]+ s' "$OUT/warm-$how.log" | head -1)"
  done
  if cmp -s "$OUT/warm-cold.txt" "$OUT/warm-profile.txt"; then row "warm start: the same ids cold and profiled"; else row "warm start: ids DIFFER cold and profiled"; fi
fi

if want big; then
  # A model larger than half the RAM, written to a tmpfs of 100 GB (the disk holds 64 GiB; /dev/shm is half the
  # RAM), at an expert budget against llama.cpp's -ncmoe at about the same VRAM bytes, pp512 and tg32, in
  # STRATA_BIG_ROUNDS (default 1) interleaved rounds; the file removed at the end unless STRATA_BIG_KEEP=1.
  # Default: issue 29's qwen3-235b-a22b at iq2_xs (about 70 GB) at 10% against -ncmoe 84 (10 of 94 layers' experts
  # on the card, a little more than 10%). Issue 31's: STRATA_BIG_ARCH/SHAPE/QUANT ("" the shape's own recipe)/
  # LAYERS (mkmodel --layers)/BUDGET/NCMOE, e.g. gpt-oss gpt-oss-120b "" "" 25% 27.
  big_dir="${STRATA_BIG_DIR:-/mnt/strata-big}"
  big_arch="${STRATA_BIG_ARCH:-qwen3moe}" big_shape="${STRATA_BIG_SHAPE:-qwen3-235b-a22b}"
  big_quant="${STRATA_BIG_QUANT-iq2_xs}" big_layers="${STRATA_BIG_LAYERS:-}" big_budget="${STRATA_BIG_BUDGET:-10%}"
  mkdir -p "$big_dir"
  mountpoint -q "$big_dir" || mount -t tmpfs -o size=100G strata-big "$big_dir" 2> "$OUT/big-mount.log"
  if ! mountpoint -q "$big_dir"; then
    row "big: could not mount a 100 GB tmpfs at $big_dir: $(head -1 "$OUT/big-mount.log")"
  else
    big="$big_dir/$big_shape${big_quant:+-$big_quant}${big_layers:+-l$big_layers}.gguf"
    t0=$SECONDS
    [ -f "$big" ] || strata mkmodel --arch "$big_arch" --shape "$big_shape" ${big_quant:+--quant "$big_quant"} \
      ${big_layers:+--layers "$big_layers"} --seed 1 --out "$big" > "$OUT/big-mkmodel.txt" 2>&1
    row "big $big_shape mkmodel (exit $?, $((SECONDS - t0)) s): $(tail -1 "$OUT/big-mkmodel.txt" | cut -c1-150); RAM $(free -g | awk '/Mem:/ {print $3 " used, " $7 " available GiB"}')"
    ncmoe="${STRATA_BIG_NCMOE:-84}"
    for round in $(seq 1 "${STRATA_BIG_ROUNDS:-1}"); do
      log "big $big_shape round $round: strata at $big_budget, then llama.cpp -ncmoe $ncmoe"
      # shellcheck disable=SC2086  # STRATA_BIG_OPTS: extra -o options for Strata's runs, split on spaces
      strata bench --model "$big" --backend cuda -o experts.cache="$big_budget" ${STRATA_BIG_OPTS:-} -p 512 -n 32 -r 1 \
        > "$OUT/big$round-s.md" 2> "$OUT/big$round-s.log"
      row "big round $round strata $big_budget (exit $?): $(ready_of "$OUT/big$round-s.log"); added RSS $(rss_of "$OUT/big$round-s.log"); $(grep -oE 'experts.cache[^;]*slots[^;]*' "$OUT/big$round-s.log" | head -1 | cut -c1-90)"
      cat "$OUT/big$round-s.md"
      # STRATA_BIG_BALANCE=1: again with plugins/pcie_balance on, which fits the PCIe share to the pool's measured
      # rate (pcie_frac auto assumes the pool reads at the host's read rate; 2-bit i-quants compute slower).
      if [ "${STRATA_BIG_BALANCE:-0}" = 1 ]; then
        # shellcheck disable=SC2086
        strata bench --model "$big" --backend cuda -o experts.cache="$big_budget" -o plugins.pcie_balance.enabled=true \
          ${STRATA_BIG_OPTS:-} -p 512 -n 32 -r 1 > "$OUT/big$round-b.md" 2> "$OUT/big$round-b.log"
        row "big round $round strata $big_budget, pcie_balance on (exit $?): pp512 $(tg_of "$OUT/big$round-b.md" pp512), tg32 $(tg_of "$OUT/big$round-b.md" tg32)"
      fi
      if [ -x "$peer" ]; then
        "$peer" -m "$big" -ngl 99 -fa on -ncmoe "$ncmoe" -t "$threads" -p 512 -n 32 -r 1 > "$OUT/big$round-p.md" 2> "$OUT/big$round-p.log"
        row "big round $round llama.cpp -ncmoe $ncmoe (exit $?)"
        cat "$OUT/big$round-p.md"
      fi
      for t in pp512 tg32; do
        s="$(tg_of "$OUT/big$round-s.md" "$t")" p="$(tg_of "$OUT/big$round-p.md" "$t" 2>/dev/null)"
        row "$(printf '  big round %d %-6s strata %-16s llama.cpp %-16s ratio %s' "$round" "$t" "$s" "${p:--}" "$(ratio "$s" "$p")")"
      done
    done
    # STRATA_BIG_PROFILE=1: where Strata's decode and a 512-token prompt spend their time on this file, op by op, at
    # the same budget (glm-4.5-air all in VRAM decoded at 0.83x llama.cpp's in the session of 2026-12-06, noon).
    if [ "${STRATA_BIG_PROFILE:-0}" = 1 ]; then
      # shellcheck disable=SC2086
      strata bench --model "$big" --backend cuda -o experts.cache="$big_budget" ${STRATA_BIG_OPTS:-} -p 0 -n 4 -r 1 \
        --profile 16 --profile-prompt 512 > /dev/null 2> "$OUT/big-profile.txt"
      row "big profile (exit $?): decode $(sed -n '/^decode profile/,/^prompt profile/p' "$OUT/big-profile.txt" > "$OUT/big-profile-decode.txt"; top_ops "$OUT/big-profile-decode.txt")"
      row "  prompt $(sed -n '/^prompt profile/,$p' "$OUT/big-profile.txt" > "$OUT/big-profile-prompt.txt"; top_ops "$OUT/big-profile-prompt.txt")"
    fi
    nvidia-smi --query-gpu=memory.used,memory.total --format=csv > "$OUT/big-gpu-mem.txt" 2>&1
    [ "${STRATA_BIG_KEEP:-0}" = 1 ] || rm -f "$big"
  fi
fi

# The device call returns only a few files: everything but the summary goes back in one archive.
tar -czf /tmp/strata-logs.tar.gz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/strata-logs.tar.gz "$OUT/logs.tar.gz"

printf '\n==== summary ====\n'
for r in "${table[@]}"; do printf '%s\n' "$r"; done | tee "$OUT/summary.txt"
