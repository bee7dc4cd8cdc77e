// MOE_ROUTED: the experts of one layer with the routes read on the device (ROUTER's ids and weights), so the
// whole op is graph-safe: one kernel groups the (token, k) pairs by expert into items and sorts each token's pairs
// by expert id, then the pipeline of expert_pairs.cuh runs. The result is MOE's for the same choices: each token's
// weighted rows summed in ascending expert id. A pair whose id is outside [0, n_expert) is left out.
// An entry with a NULL gate is computed elsewhere: it gets no items, and its pairs' rows come from src3 (every path
// takes src3; its ready flag, i[0] = 1, only the decode path). Rows out (i[2] = 1) writes each computed pair's row
// to dst's column t * k + j and sums nothing. Which path runs depends on the window's shape and types alone, never
// on the mode or on which entries are NULL, so a pair's row has the same bytes in a rows-out op and a summing one.
// The table's form (backend 1.6: biases and SwiGLU-OAI, expert_form.cuh) reaches every path's kernels.
#include <string>

#include "expert_pairs.cuh"
#include "matvec.cuh"
#include "moe_decode.cuh"
#include "moe_tiled.cuh"
#include "ops.hpp"
#include "pair_rows.cuh"
#include "scratch_carve.hpp"
#include "strata/format/expert_form.hpp"
#include "strata/format/flag_ops.hpp"
#include "strata/format/moe_routed_modes.hpp"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

constexpr int kGroupThreads = 1024;
constexpr uint64_t kGroupSharedBytes = 48 * 1024;

struct RouteIndex {
  PairItem* items;
  uint32_t* n_items;
  float* pair_weight;
  uint32_t* tok_begin;
  uint32_t* tok_count;
  uint32_t* tok_pairs;
};

// expert_count of an expert whose entry has no gate matrix: computed elsewhere, no items.
constexpr int kExpertElsewhere = -1;

// One block: pair p = t * k + j reads ids[t][j] and weights[t][j]; items of up to `per_item` pairs per expert, in
// ascending pair order within an expert, for the experts whose entry has a gate; each token's pairs sorted by
// expert id (stable), those of gate-less entries marked kPairElsewhere. Each pair's expert sits in shared memory
// when the window's pairs fit there, else in `pair_expert_mem` (device scratch; long windows such as
// runtime.batch 2048 with 8 experts a token).
__global__ void __launch_bounds__(kGroupThreads) group_routes_kernel(
    const int32_t* ids, int64_t ids_stride, const float* weights, int64_t weights_stride, int k, int n_tok,
    int n_expert, const strata_expert_weights* experts, int per_item, int* pair_expert_mem, RouteIndex out) {
  extern __shared__ int shared[];
  const int n_pairs = k * n_tok;
  int* expert_count = shared;                  // [n_expert]
  int* expert_item = expert_count + n_expert;  // [n_expert] first item of the expert
  int* pair_expert = pair_expert_mem != nullptr ? pair_expert_mem : expert_item + n_expert;  // [n_pairs], -1: no expert
  const int tid = static_cast<int>(threadIdx.x);

  for (int p = tid; p < n_pairs; p += blockDim.x) {
    const int t = p / k, j = p % k;
    const int32_t id = ids[static_cast<int64_t>(t) * ids_stride + j];
    pair_expert[p] = id >= 0 && id < n_expert ? id : -1;
    out.pair_weight[p] = weights[static_cast<int64_t>(t) * weights_stride + j];
  }
  __syncthreads();
  for (int e = tid; e < n_expert; e += blockDim.x) {
    if (experts[e].gate == nullptr) {
      expert_count[e] = kExpertElsewhere;
      continue;
    }
    int count = 0;
    for (int p = 0; p < n_pairs; ++p) count += pair_expert[p] == e;
    expert_count[e] = count;
  }
  __syncthreads();
  if (tid == 0) {
    int next = 0;
    for (int e = 0; e < n_expert; ++e) {
      expert_item[e] = next;
      if (expert_count[e] != kExpertElsewhere) next += (expert_count[e] + per_item - 1) / per_item;
    }
    *out.n_items = static_cast<uint32_t>(next);
  }
  __syncthreads();
  for (int e = tid; e < n_expert; e += blockDim.x) {
    if (expert_count[e] == kExpertElsewhere) continue;
    int seen = 0;
    for (int p = 0; p < n_pairs; ++p) {
      if (pair_expert[p] != e) continue;
      PairItem& it = out.items[expert_item[e] + seen / per_item];
      const int slot = seen % per_item;
      if (slot == 0) {
        const strata_expert_weights& w = experts[e];
        it.mat[0] = static_cast<const uint8_t*>(w.gate);
        it.mat[1] = static_cast<const uint8_t*>(w.up);
        it.mat[2] = static_cast<const uint8_t*>(w.down);
        it.expert = static_cast<uint32_t>(e);
        const int left = expert_count[e] - seen;
        it.n = static_cast<uint32_t>(left < per_item ? left : per_item);
      }
      it.token[slot] = static_cast<uint32_t>(p / k);
      it.pair[slot] = static_cast<uint32_t>(p);
      ++seen;
    }
  }
  for (int t = tid; t < n_tok; t += blockDim.x) {
    uint32_t* list = out.tok_pairs + static_cast<int64_t>(t) * k;
    int count = 0;
    for (int j = 0; j < k; ++j) {
      const int p = t * k + j;
      const int e = pair_expert[p];
      if (e < 0) continue;
      // Insertion into the sorted prefix; equal ids keep their j order.
      int at = count++;
      while (at > 0 && pair_expert[list[at - 1] & ~kPairElsewhere] > e) {
        list[at] = list[at - 1];
        --at;
      }
      list[at] = static_cast<uint32_t>(p) | (expert_count[e] == kExpertElsewhere ? kPairElsewhere : 0u);
    }
    out.tok_begin[t] = static_cast<uint32_t>(t * k);
    out.tok_count[t] = static_cast<uint32_t>(count);
  }
}

constexpr const char* kReadyFlagWindows =
    "src3's ready flag (i[0] = 1) is supported for windows of up to 8 tokens on cuda (k up to 16, gate and up of one "
    "quantized type with a decode kernel); other windows take src3 without a flag";

// The grouping's shared memory: two counters per expert, and each pair's expert when `pairs_in_shared`.
uint64_t group_shared_bytes(int64_t n_pairs, int64_t n_expert, bool pairs_in_shared) {
  return static_cast<uint64_t>((pairs_in_shared ? n_pairs : 0) + 2 * n_expert) * sizeof(int);
}
bool pairs_fit_shared(int64_t n_pairs, int64_t n_expert) {
  return group_shared_bytes(n_pairs, n_expert, true) <= kGroupSharedBytes;
}


Check check_weight_type(uint32_t type, int64_t row_len, const char* which) {
  const int align = expert_weight_alignment(type);
  if (align == 0) return std::string(which) + " type " + format::type_name(type) + " has no GPU kernel";
  const auto tr = format::type_traits(type);
  if (row_len % tr->block_elems != 0) return std::string(which) + " rows are not whole " + format::type_name(type) + " blocks";
  if (row_bytes(tr->type, static_cast<uint64_t>(row_len)) % static_cast<unsigned>(align) != 0) {
    return std::string(which) + " rows are not a multiple of " + std::to_string(align) + " bytes";
  }
  return std::nullopt;
}

}  // namespace

Check check_moe_routed(const strata_op& op) {
  if (op.extra == nullptr) return std::string("MOE_ROUTED needs a strata_expert_table in extra");
  const auto& table = *static_cast<const strata_expert_table*>(op.extra);
  const strata_tensor &x = op.src[0], &ids = op.src[1], &w = op.src[2], &d = op.dst;
  if (table.n_embd == 0 || table.n_ff == 0 || table.n_expert == 0) return std::string("n_embd, n_ff and n_expert must be positive");
  if (table.experts == nullptr) return std::string("the expert table has no experts array");
  if (auto why = format::check_expert_form(table.form)) return why;
  if (auto e = check_weight_type(table.gate_type, table.n_embd, "gate")) return e;
  if (auto e = check_weight_type(table.up_type, table.n_embd, "up")) return e;
  if (auto e = check_weight_type(table.down_type, table.n_ff, "down")) return e;
  if (auto e = format::check_matrix(x, "src0 (x)", GgmlType::F32)) return e;
  if (auto e = format::check_matrix(ids, "src1 (ids)", GgmlType::I32)) return e;
  if (auto e = format::check_matrix(w, "src2 (weights)", GgmlType::F32)) return e;
  if (auto e = format::check_matrix(d, "dst", GgmlType::F32)) return e;
  const int64_t n_tok = x.ne[1], k = ids.ne[0];
  if (x.ne[0] != table.n_embd) return std::string("src0 (x) rows are not n_embd long");
  if (ids.ne[1] != n_tok) return std::string("src1 (ids) is not [k, n_tok]");
  if (w.ne[0] != k || w.ne[1] != n_tok) return std::string("src2 (weights) is not [k, n_tok] like src1 (ids)");
  if (auto e = format::check_rows_out(op)) return e;
  if (!format::rows_out(op) && (d.ne[0] != table.n_embd || d.ne[1] != n_tok)) {
    return std::string("dst shape is not [n_embd, n_tok]");
  }
  for (const strata_tensor* t : {&x, &ids, &w, &d}) {
    if ((reinterpret_cast<uintptr_t>(t->data) | t->nb[1]) % 4 != 0) return std::string("a tensor's rows are not 4-byte aligned");
  }
  if (group_shared_bytes(k * n_tok, table.n_expert, false) > kGroupSharedBytes) {
    return "too many experts (" + std::to_string(table.n_expert) + ") for one MOE_ROUTED on the GPU (at most " +
           std::to_string(kGroupSharedBytes / (2 * sizeof(int))) + ")";
  }
  if (auto e = format::check_precomputed_ready(op)) return e;
  const strata_tensor& pre = op.src[3];
  if (pre.data != nullptr) {
    if (auto e = format::check_matrix(pre, "src3 (precomputed rows)", GgmlType::F32)) return e;
    if (pre.ne[0] != table.n_embd || pre.ne[1] != k * n_tok) {
      return "src3 (precomputed rows) is [" + std::to_string(pre.ne[0]) + ", " + std::to_string(pre.ne[1]) +
             "], expected [n_embd, k * n_tok] = [" + std::to_string(table.n_embd) + ", " + std::to_string(k * n_tok) + "]";
    }
    if ((reinterpret_cast<uintptr_t>(pre.data) | pre.nb[1]) % 4 != 0) return std::string("src3 (precomputed rows) is not 4-byte aligned");
  }
  if (op.i[0] == 1 && !moe_routed_decode_takes(op)) return std::string(kReadyFlagWindows);
  return std::nullopt;
}

void run_moe_routed(Context& ctx, const strata_op& op) {
  // Decode windows (up to 8 tokens) and long prefill windows have paths of their own; the rest runs below.
  if (run_moe_routed_decode(ctx, op)) return;
  // Only the decode path waits for src3's ready flag: elsewhere src3 would be read before it is written.
  if (format::precomputed_ready(op) != nullptr) {
    throw OpFailure(STRATA_ERR_UNSUPPORTED, std::string("MOE_ROUTED: ") + kReadyFlagWindows);
  }
  if (run_moe_routed_tiled(ctx, op)) return;
  const auto& table = *static_cast<const strata_expert_table*>(op.extra);
  const strata_tensor &x = op.src[0], &ids = op.src[1], &w = op.src[2], &d = op.dst;
  const int64_t n_tok = x.ne[1], k = ids.ne[0], n_pairs = k * n_tok;
  const int per_item = tokens_per_pass(n_tok);
  const int64_t most_items = table.n_expert + n_pairs / per_item;
  const auto max_items = static_cast<unsigned>(n_pairs < most_items ? n_pairs : most_items);

  // The device plan, carved from one buffer.
  ScratchCarve carve;
  const uint64_t at_items = carve.take(max_items * sizeof(PairItem));
  const uint64_t at_n_items = carve.take(sizeof(uint32_t));
  const uint64_t at_weights = carve.take(static_cast<uint64_t>(n_pairs) * sizeof(float));
  const uint64_t at_begin = carve.take(static_cast<uint64_t>(n_tok) * sizeof(uint32_t));
  const uint64_t at_count = carve.take(static_cast<uint64_t>(n_tok) * sizeof(uint32_t));
  const uint64_t at_pairs = carve.take(static_cast<uint64_t>(n_pairs) * sizeof(uint32_t));
  const bool pairs_in_shared = pairs_fit_shared(n_pairs, table.n_expert);
  const uint64_t at_pair_expert = pairs_in_shared ? 0 : carve.take(static_cast<uint64_t>(n_pairs) * sizeof(int));
  auto* index = static_cast<unsigned char*>(ctx.scratch(ScratchSlot::MoeIndex, carve.size));
  // Rows out: the down pass writes each computed pair's row to its column of dst, and nothing is summed.
  const bool rows_out = format::rows_out(op);
  auto* rows = rows_out ? static_cast<float*>(d.data)
                        : static_cast<float*>(ctx.scratch(ScratchSlot::MoeRows, static_cast<uint64_t>(n_pairs) * table.n_embd * sizeof(float)));

  RouteIndex ri{reinterpret_cast<PairItem*>(index + at_items), reinterpret_cast<uint32_t*>(index + at_n_items),
                reinterpret_cast<float*>(index + at_weights),  reinterpret_cast<uint32_t*>(index + at_begin),
                reinterpret_cast<uint32_t*>(index + at_count), reinterpret_cast<uint32_t*>(index + at_pairs)};
  group_routes_kernel<<<1, kGroupThreads, group_shared_bytes(n_pairs, table.n_expert, pairs_in_shared), ctx.stream()>>>(
      static_cast<const int32_t*>(ids.data), static_cast<int64_t>(ids.nb[1] / sizeof(int32_t)),
      static_cast<const float*>(w.data), static_cast<int64_t>(w.nb[1] / sizeof(float)), static_cast<int>(k),
      static_cast<int>(n_tok), static_cast<int>(table.n_expert), table.experts, per_item,
      pairs_in_shared ? nullptr : reinterpret_cast<int*>(index + at_pair_expert), ri);
  check_launch("MOE_ROUTED (grouping)");

  ExpertPlan plan{};
  plan.gate_type = table.gate_type;
  plan.up_type = table.up_type;
  plan.down_type = table.down_type;
  plan.n_embd = table.n_embd;
  plan.n_ff = table.n_ff;
  plan.n_tok = n_tok;
  plan.n_pairs = n_pairs;
  plan.pairs_per_item = per_item;
  plan.items = ri.items;
  plan.n_items = ri.n_items;
  plan.max_items = max_items;
  plan.pair_weight = ri.pair_weight;
  plan.tok_begin = ri.tok_begin;
  plan.tok_count = ri.tok_count;
  plan.tok_pairs = ri.tok_pairs;
  plan.x = static_cast<const float*>(x.data);
  plan.x_stride = static_cast<int64_t>(x.nb[1] / sizeof(float));
  plan.rows = rows;
  plan.rows_stride = rows_out ? static_cast<int64_t>(d.nb[1] / sizeof(float)) : static_cast<int64_t>(table.n_embd);
  plan.pre = static_cast<const float*>(op.src[3].data);
  plan.pre_stride = static_cast<int64_t>(op.src[3].nb[1] / sizeof(float));
  plan.dst = rows_out ? nullptr : static_cast<float*>(d.data);
  plan.dst_stride = static_cast<int64_t>(d.nb[1] / sizeof(float));
  plan.form = expert_form_of(table.form);
  run_expert_plan(ctx, plan);
}

}  // namespace strata::gpu
