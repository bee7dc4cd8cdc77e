// The tiled MOE_ROUTED (moe_tiled.cuh). One block groups the pairs: pair p = t * k + j of a valid expert id goes
// to its expert's list (ascending p), each expert's list is cut into tiles of up to kTileCols pairs, and each
// token's pairs are sorted by expert id for the final sums. Then: Q8_1 of x (the context's cache), gate and up
// tiles into g and u rows per pair, the activation (+ the form's gate and up biases first) with its Q8_1
// (launch_swiglu), down tiles weighted by the route weight (with a down bias: + bias, then weighted, by
// finish_down_kernel) into a row per pair, and each token's rows summed in ascending expert id.
// An expert whose entry has no gate matrix is computed elsewhere: the grouping gives it no tiles, and the sums read
// its pairs' rows from src3 (pair_rows.cuh). Rows out (i[2] = 1): the down tiles write each pair's row to dst's
// column t * k + j and nothing is summed.
#include <string>

#include "act_quant.cuh"
#include "matvec.cuh"
#include "mma_tile.cuh"
#include "moe_tiled.cuh"
#include "ops.hpp"
#include "pair_rows.cuh"
#include "scratch_carve.hpp"
#include "strata/format/moe_routed_modes.hpp"
#include "strata/format/types.hpp"
#include "tiled_product.cuh"

namespace strata::gpu {
namespace {

constexpr int kGroupThreads = 1024;
constexpr int kMaxSegments = 32;           // pair ranges counted and placed in parallel, each by one thread
constexpr int kSegmentSharedBytes = 28 * 1024;  // with the per-expert arrays, at most 44 KB at 1024 experts
constexpr int64_t kMinTokens = 9;
// The tiled product computes whole tiles of kTileCols pairs; below about four pairs per expert on average most of
// a tile is idle and the pair kernels (eight pairs per item) do less work. An estimate, not a measurement.
constexpr int64_t kMinPairsPerExpert = 4;

struct Grouping {
  ExpertTile* tiles;     // [max_tiles]
  uint32_t* n_tiles;
  float* pair_weight;    // [n_pairs]
  uint32_t* pairs;       // [n_pairs] grouped by expert, ascending pair within an expert
  uint32_t* tok_count;   // [n_tok] valid pairs of token t, listed in tok_pairs[t * k ..] by ascending expert id,
  uint32_t* tok_pairs;   // [n_pairs]   with kPairElsewhere on those of experts computed elsewhere
  int* pair_expert;      // [n_pairs] the pair's expert, -1 for an id out of range
};

// Segments: contiguous pair ranges, one thread each, so that the count and the placement of each range run in
// parallel and still list an expert's pairs in ascending order (segment s's pairs go after those of segments < s).
__host__ __device__ inline int segments_for(int n_expert) {
  const int fit = kSegmentSharedBytes / (4 * (n_expert > 0 ? n_expert : 1));
  return fit < 1 ? 1 : fit < kMaxSegments ? fit : kMaxSegments;
}

// A counting sort of the pairs by expert, stable, in one block: every step is parallel over pairs, segments,
// experts or tokens; the longest serial walk is one segment's n_pairs / segments pairs. Pairs of experts computed
// elsewhere (no gate matrix) are left out of the tiles but kept in their tokens' lists.
__global__ void __launch_bounds__(kGroupThreads) group_by_expert_kernel(
    const int32_t* ids, int64_t ids_stride, const float* weights, int64_t weights_stride, int k, int n_tok,
    int n_expert, const strata_expert_weights* experts, Grouping out) {
  extern __shared__ int shared[];
  const int n_pairs = k * n_tok;
  const int n_seg = segments_for(n_expert);
  const int seg_len = (n_pairs + n_seg - 1) / n_seg;
  int* expert_count = shared;                    // [n_expert] computed pairs
  int* expert_start = expert_count + n_expert;   // [n_expert] into out.pairs
  int* tile_start = expert_start + n_expert;     // [n_expert] into out.tiles
  int* elsewhere = tile_start + n_expert;        // [n_expert] 1: the entry has no gate matrix
  int* hist = elsewhere + n_expert;              // [n_seg][n_expert]: counts, then each segment's next slot
  const int tid = static_cast<int>(threadIdx.x);

  for (int p = tid; p < n_pairs; p += blockDim.x) {
    const int t = p / k, j = p % k;
    const int32_t id = ids[static_cast<int64_t>(t) * ids_stride + j];
    out.pair_expert[p] = id >= 0 && id < n_expert ? id : -1;
    out.pair_weight[p] = weights[static_cast<int64_t>(t) * weights_stride + j];
  }
  for (int i = tid; i < n_seg * n_expert; i += blockDim.x) hist[i] = 0;
  for (int e = tid; e < n_expert; e += blockDim.x) elsewhere[e] = experts[e].gate == nullptr ? 1 : 0;
  __syncthreads();
  if (tid < n_seg) {
    int* h = hist + tid * n_expert;
    const int end = min(n_pairs, (tid + 1) * seg_len);
    for (int p = tid * seg_len; p < end; ++p) {
      const int e = out.pair_expert[p];
      if (e >= 0 && elsewhere[e] == 0) ++h[e];
    }
  }
  __syncthreads();
  for (int e = tid; e < n_expert; e += blockDim.x) {
    int running = 0;
    for (int sg = 0; sg < n_seg; ++sg) {
      const int c = hist[sg * n_expert + e];
      hist[sg * n_expert + e] = running;
      running += c;
    }
    expert_count[e] = running;
  }
  __syncthreads();
  constexpr auto kCap = static_cast<int>(kTileCols);
  if (tid == 0) {
    int at = 0, tiles = 0;
    for (int e = 0; e < n_expert; ++e) {
      expert_start[e] = at;
      tile_start[e] = tiles;
      at += expert_count[e];
      tiles += (expert_count[e] + kCap - 1) / kCap;
    }
    *out.n_tiles = static_cast<uint32_t>(tiles);
  }
  __syncthreads();
  for (int e = tid; e < n_expert; e += blockDim.x) {
    const int count = expert_count[e];
    for (int q = 0, tile = tile_start[e]; q < count; q += kCap, ++tile) {
      const int left = count - q;
      out.tiles[tile] = {static_cast<uint32_t>(e), static_cast<uint32_t>(expert_start[e] + q),
                         static_cast<uint32_t>(left < kCap ? left : kCap), 0u};
    }
  }
  if (tid < n_seg) {
    int* h = hist + tid * n_expert;
    const int end = min(n_pairs, (tid + 1) * seg_len);
    for (int p = tid * seg_len; p < end; ++p) {
      const int e = out.pair_expert[p];
      if (e >= 0 && elsewhere[e] == 0) out.pairs[expert_start[e] + h[e]++] = static_cast<uint32_t>(p);
    }
  }
  for (int t = tid; t < n_tok; t += blockDim.x) {
    uint32_t* list = out.tok_pairs + static_cast<int64_t>(t) * k;
    int count = 0;
    for (int j = 0; j < k; ++j) {
      const int p = t * k + j;
      const int e = out.pair_expert[p];
      if (e < 0) continue;
      int at = count++;  // insertion into the sorted prefix; equal ids keep their j order
      while (at > 0 && out.pair_expert[list[at - 1] & ~kPairElsewhere] > e) {
        list[at] = list[at - 1];
        --at;
      }
      list[at] = static_cast<uint32_t>(p) | (elsewhere[e] != 0 ? kPairElsewhere : 0u);
    }
    out.tok_count[t] = static_cast<uint32_t>(count);
  }
}

int group_shared_bytes(int n_expert) {
  return (4 + segments_for(n_expert)) * n_expert * static_cast<int>(sizeof(int));
}

// The form's down bias (backend 1.6) on this path, after the down tiles wrote each computed pair's dot unweighted:
// row = weight * (dot + bd), the other paths' operations in their order (the tiled product has no registers to spare
// for it). Pairs no tile computed (an invalid id, an expert computed elsewhere) are not touched.
__global__ void finish_down_kernel(float* out, int64_t out_stride, int64_t n_embd, const int* pair_expert,
                                   const strata_expert_weights* experts, const float* pair_weight,
                                   const float* down_bias) {
  const int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t p = blockIdx.x;
  if (r >= n_embd) return;
  const int e = pair_expert[p];
  if (e < 0 || experts[e].gate == nullptr) return;
  float* row = out + p * out_stride;
  row[r] = pair_weight[p] * add_bias(row[r], down_bias, e, n_embd, r);
}

// dst row t = token t's weighted rows in ascending expert id: the first, then + each next (zeros for none); a pair
// computed elsewhere adds src3's column (pair_rows.cuh).
__global__ void sum_token_rows_kernel(const float* rows, int64_t n_embd, const float* pre, int64_t pre_stride, int k,
                                      const uint32_t* tok_count, const uint32_t* tok_pairs, float* dst,
                                      int64_t dst_stride) {
  const int64_t d = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (d >= n_embd) return;
  const uint32_t t = blockIdx.y;
  const uint32_t* list = tok_pairs + static_cast<int64_t>(t) * k;
  const uint32_t count = tok_count[t];
  float acc = 0.0f;
  for (uint32_t i = 0; i < count; ++i) {
    const float v = pair_row(list[i], d, rows, n_embd, pre, pre_stride);
    acc = i == 0 ? v : acc + v;
  }
  dst[static_cast<int64_t>(t) * dst_stride + d] = acc;
}


}  // namespace

bool run_moe_routed_tiled(Context& ctx, const strata_op& op) {
  const auto& table = *static_cast<const strata_expert_table*>(op.extra);
  const strata_tensor &x = op.src[0], &ids = op.src[1], &w = op.src[2], &d = op.dst;
  const int64_t n_tok = x.ne[1], k = ids.ne[0], n_pairs = k * n_tok;
  const int64_t n_embd = table.n_embd, n_ff = table.n_ff, n_expert = table.n_expert;
  if (n_tok < kMinTokens || n_pairs < kMinPairsPerExpert * n_expert) return false;
  if (n_expert > 1024 || n_pairs > INT32_MAX / 2) return false;  // the grouping's lists: at most 44 KB of shared memory
  if (!has_tiled_kernel(table.gate_type, ctx) || !has_tiled_kernel(table.up_type, ctx) ||
      !has_tiled_kernel(table.down_type, ctx)) {
    return false;
  }
  cudaStream_t stream = ctx.stream();

  // The device plan, carved from one buffer.
  const int64_t most_tiles = n_expert + n_pairs / kTileCols;
  const auto max_tiles = static_cast<unsigned>(n_pairs < most_tiles ? n_pairs : most_tiles);
  ScratchCarve carve;
  const uint64_t at_tiles = carve.take(max_tiles * sizeof(ExpertTile));
  const uint64_t at_n_tiles = carve.take(sizeof(uint32_t));
  const uint64_t at_weights = carve.take(static_cast<uint64_t>(n_pairs) * sizeof(float));
  const uint64_t at_pairs = carve.take(static_cast<uint64_t>(n_pairs) * sizeof(uint32_t));
  const uint64_t at_count = carve.take(static_cast<uint64_t>(n_tok) * sizeof(uint32_t));
  const uint64_t at_tok_pairs = carve.take(static_cast<uint64_t>(n_pairs) * sizeof(uint32_t));
  const uint64_t at_pair_expert = carve.take(static_cast<uint64_t>(n_pairs) * sizeof(int));
  auto* index = static_cast<unsigned char*>(ctx.scratch(ScratchSlot::MoeIndex, carve.size));
  Grouping g{reinterpret_cast<ExpertTile*>(index + at_tiles), reinterpret_cast<uint32_t*>(index + at_n_tiles),
             reinterpret_cast<float*>(index + at_weights),    reinterpret_cast<uint32_t*>(index + at_pairs),
             reinterpret_cast<uint32_t*>(index + at_count),   reinterpret_cast<uint32_t*>(index + at_tok_pairs),
             reinterpret_cast<int*>(index + at_pair_expert)};

  const uint64_t xq_bytes = static_cast<uint64_t>(n_embd / 32) * kQ8BlockBytes * static_cast<uint64_t>(n_tok);
  void* xq = ctx.scratch(ScratchSlot::ActQ8, xq_bytes);
  const uint64_t hidden = static_cast<uint64_t>(n_pairs) * static_cast<uint64_t>(n_ff);
  auto* gu = static_cast<float*>(ctx.scratch(ScratchSlot::MoeHidden, 2 * hidden * sizeof(float)));
  void* hq = ctx.scratch(ScratchSlot::MoeHiddenQ8, static_cast<uint64_t>(n_pairs) * static_cast<uint64_t>(n_ff / 32) * kQ8BlockBytes);
  // Rows out: the down tiles write each computed pair's row to its column of dst, and nothing is summed.
  const bool rows_out = format::rows_out(op);
  auto* rows = rows_out ? nullptr
                        : static_cast<float*>(ctx.scratch(ScratchSlot::MoeRows, static_cast<uint64_t>(n_pairs) * static_cast<uint64_t>(n_embd) * sizeof(float)));

  group_by_expert_kernel<<<1, kGroupThreads, group_shared_bytes(static_cast<int>(n_expert)), stream>>>(
      static_cast<const int32_t*>(ids.data), static_cast<int64_t>(ids.nb[1] / sizeof(int32_t)),
      static_cast<const float*>(w.data), static_cast<int64_t>(w.nb[1] / sizeof(float)), static_cast<int>(k),
      static_cast<int>(n_tok), static_cast<int>(n_expert), table.experts, g);
  check_launch("MOE_ROUTED (grouping by expert)");

  const auto* xdata = static_cast<const float*>(x.data);
  QuantizedActivation& cached = ctx.quantized();
  if (cached.src != x.data || cached.n_in != n_embd || cached.n_tok != n_tok || cached.row_stride != x.nb[1]) {
    launch_quantize_q8_1(xdata, static_cast<int64_t>(x.nb[1] / sizeof(float)), n_embd, n_tok, xq, stream);
    cached = {x.data, n_embd, n_tok, x.nb[1]};
  }

  const auto row_stride = [](uint32_t type, int64_t n) {
    return format::row_bytes(static_cast<format::GgmlType>(type), static_cast<uint64_t>(n));
  };
  TiledJob job{};
  job.tiles = g.tiles;
  job.n_tiles = g.n_tiles;
  job.experts = table.experts;
  job.pairs = g.pairs;
  job.rows = static_cast<int>(n_ff);
  job.n_spans = static_cast<int>(n_embd / 32);
  job.act = static_cast<const unsigned char*>(xq);
  job.act_div = static_cast<int>(k);
  job.out_stride = n_ff;
  const ExpertForm form = expert_form_of(table.form);
  for (int which = 0; which < 2; ++which) {
    const uint32_t type = which == 0 ? table.gate_type : table.up_type;
    job.which = which;
    job.w_stride = row_stride(type, n_embd);
    job.out = gu + which * hidden;
    launch_tiled(job, type, max_tiles, stream);
  }
  launch_swiglu(gu, gu + hidden, n_ff, n_pairs, form.act, nullptr, hq, stream,
                RowBiases{g.pair_expert, form.bias.gate, form.bias.up});

  job.which = 2;
  job.w_stride = row_stride(table.down_type, n_ff);
  job.rows = static_cast<int>(n_embd);
  job.n_spans = static_cast<int>(n_ff / 32);
  job.act = static_cast<const unsigned char*>(hq);
  job.act_div = 1;
  job.out = rows_out ? static_cast<float*>(d.data) : rows;
  job.out_stride = rows_out ? static_cast<int64_t>(d.nb[1] / sizeof(float)) : n_embd;
  // With a down bias the tiles write the dots and finish_down_kernel adds the bias and weighs them.
  job.pair_weight = form.bias.down != nullptr ? nullptr : g.pair_weight;
  launch_tiled(job, table.down_type, max_tiles, stream);
  if (form.bias.down != nullptr && n_pairs > 0) {
    constexpr int kFinishThreads = 128;
    const dim3 grid(static_cast<unsigned>(n_pairs), static_cast<unsigned>((n_embd + kFinishThreads - 1) / kFinishThreads));
    finish_down_kernel<<<grid, kFinishThreads, 0, stream>>>(job.out, job.out_stride, n_embd, g.pair_expert,
                                                            table.experts, g.pair_weight, form.bias.down);
    check_launch("MOE_ROUTED (the form's down bias)");
  }
  if (rows_out) return true;

  constexpr int kSumThreads = 128;
  const strata_tensor& pre = op.src[3];
  const dim3 grid(static_cast<unsigned>((n_embd + kSumThreads - 1) / kSumThreads), static_cast<unsigned>(n_tok));
  sum_token_rows_kernel<<<grid, kSumThreads, 0, stream>>>(
      rows, n_embd, static_cast<const float*>(pre.data), static_cast<int64_t>(pre.nb[1] / sizeof(float)),
      static_cast<int>(k), g.tok_count, g.tok_pairs, static_cast<float*>(d.data),
      static_cast<int64_t>(d.nb[1] / sizeof(float)));
  check_launch("MOE_ROUTED (sums per token)");
  return true;
}

}  // namespace strata::gpu
