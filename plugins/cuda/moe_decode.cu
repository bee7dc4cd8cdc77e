// The decode path of MOE_ROUTED (moe_decode.cuh).
//
// Both kernels compute their row dots block-wide (matvec_block.cuh: every span partial with several loads in
// flight per thread, then the canonical chains and tree per dot).
// gate_up_kernel: block (c, p) owns rows 32c..32c+31 of pair p = t * k + j's gate and up matrices (64 dots). It
// first quantizes token t's x to Q8_1 in shared memory itself, with the same block quantizer as the Q8_1 launch
// (so the op needs no launch for it); then h = silu_c(g) * u for the 32 rows and their Q8_1 block (scale from the
// 32 values in element order, as quantize_block_q8_1 does).
// down_kernel: block (c, t) owns kDownRows output rows of token t; its dots are (row, expert) for the token's
// experts in ascending id (stable for equal ids); then per row out = w1 * y1; out = out + w2 * y2; ... in that
// order.
#include "act_quant.cuh"
#include "matvec_block.cuh"
#include "moe_decode.cuh"
#include "ops.hpp"
#include "strata/format/types.hpp"

namespace strata::gpu {
namespace {

constexpr int kMaxTokens = 8;
constexpr int kMaxK = 16;
constexpr int kGateUpRows = 32;                   // one Q8_1 block of h
constexpr int kGateUpDots = 2 * kGateUpRows;      // gate and up
constexpr int kGateUpThreads = kGateUpDots * kAccumulators;  // the reduce in one pass
constexpr int kGateUpUnroll = 2;
constexpr int kDownRows = 2;                      // output rows per block
constexpr int kDownThreads = 256;
constexpr int kDownUnroll = 2;
constexpr int kMaxSharedBytes = 48 * 1024;

struct Routes {
  const int32_t* ids;
  int64_t ids_stride;
  const float* weights;
  int64_t weights_stride;
  int k;
  int n_expert;
  const strata_expert_weights* experts;
};

__device__ inline int valid_id(const Routes& r, int t, int j) {
  const int32_t id = r.ids[static_cast<int64_t>(t) * r.ids_stride + j];
  return id >= 0 && id < r.n_expert ? id : -1;
}

// The token's valid pairs j in ascending expert id (stable for equal ids), by one thread from the ids already in
// shared memory (-1: left out); returns how many. Reading global memory here would put one load's latency per
// comparison on every block's critical path.
__device__ inline int sorted_pairs(const int* id_of, int k, int* order) {
  int n = 0;
  for (int j = 0; j < k; ++j) {
    const int id = id_of[j];
    if (id < 0) continue;
    int at = n++;  // insertion into the sorted prefix; equal ids keep their j order
    while (at > 0 && id_of[order[at - 1]] > id) {
      order[at] = order[at - 1];
      --at;
    }
    order[at] = j;
  }
  return n;
}

template <class Dec>
__global__ void __launch_bounds__(kGateUpThreads, 2) gate_up_kernel(Routes routes, const float* x, int64_t x_stride,
                                                                 int n_spans, uint64_t w_stride, int n_ff,
                                                                 unsigned char* hq) {
  extern __shared__ uint4 shared_words[];
  auto* act = reinterpret_cast<unsigned char*>(shared_words);  // the token's Q8_1 row of x
  float* part = reinterpret_cast<float*>(act + staged_act_bytes(n_spans, 1));
  const int pitch = partial_pitch(n_spans);
  float* gu = part + kGateUpDots * pitch;  // [kGateUpDots]: 32 gate dots, then 32 up dots
  const int p = static_cast<int>(blockIdx.y);
  const int t = p / routes.k, j = p % routes.k;
  const int id = valid_id(routes, t, j);
  if (id < 0) return;  // the whole block: the pair is left out
  const strata_expert_weights& e = routes.experts[id];
  const auto* gate = static_cast<const uint8_t*>(e.gate);
  const auto* up = static_cast<const uint8_t*>(e.up);
  const int row0 = static_cast<int>(blockIdx.x) * kGateUpRows;
  // x's Q8_1 blocks, each by one thread, as quantize_q8_1_kernel writes them (no launch of its own).
  const float* xt = x + static_cast<int64_t>(t) * x_stride;
  for (int blk = static_cast<int>(threadIdx.x); blk < n_spans; blk += kGateUpThreads) {
    float v[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) v[i] = xt[32 * blk + i];
    uint32_t w[kQ8Words];
    quantize_block_q8_1(v, w);
    auto* dstw = reinterpret_cast<uint32_t*>(act + blk * kQ8BlockBytes);
#pragma unroll
    for (int i = 0; i < kQ8Words; ++i) dstw[i] = w[i];
  }
  __syncthreads();
  block_partials<Dec, kGateUpThreads, kGateUpUnroll>(
      kGateUpDots, n_spans,
      [&](int d) {
        const uint8_t* m = d < kGateUpRows ? gate : up;
        return m + static_cast<uint64_t>(row0 + d % kGateUpRows) * w_stride;
      },
      [&](int) { return static_cast<const unsigned char*>(act); }, part, pitch);
  __syncthreads();
  block_reduce<kGateUpThreads>(kGateUpDots, n_spans, part, pitch, [&](int d, float v) { gu[d] = v; });
  __syncthreads();
  // h for the block's 32 rows and its Q8_1 block (scale from the 32 values in element order, as
  // quantize_block_q8_1 does), by the first warp (kWarp >= 32).
  float* sh = part;  // the partials are no longer needed
  if (threadIdx.x < kGateUpRows) sh[threadIdx.x] = silu_c(gu[threadIdx.x]) * gu[kGateUpRows + threadIdx.x];
  __syncthreads();
  const int warp = static_cast<int>(threadIdx.x) / kWarp, lane = static_cast<int>(threadIdx.x) % kWarp;
  if (warp != 0) return;
  float d, id_scale;
  q8_1_scale(sh, d, id_scale);
  const int8_t q = lane < kGateUpRows ? q8_1_value(sh[lane], id_scale) : 0;
  int sum = q;
  for (int m = 1; m < kWarp; m <<= 1) sum += shfl_xor(sum, m);  // exact: integers
  const int n_blocks = n_ff / kGateUpRows;
  unsigned char* blk = hq + (static_cast<uint64_t>(p) * static_cast<uint64_t>(n_blocks) + blockIdx.x) * kQ8BlockBytes;
  if (lane < kGateUpRows) blk[4 + lane] = static_cast<unsigned char>(q);
  if (lane == 0) *reinterpret_cast<uint32_t*>(blk) = q8_1_header(d, sum);
}

int gate_up_shared_bytes(int n_spans) {
  return staged_act_bytes(n_spans, 1) + (kGateUpDots * partial_pitch(n_spans) + kGateUpDots) * static_cast<int>(sizeof(float));
}

// Block (c, t): output rows kDownRows * c .. of token t. Dots: (row, the token's q-th expert in ascending id).
template <class Dec>
__global__ void __launch_bounds__(kDownThreads) down_kernel(Routes routes, const unsigned char* hq, int n_spans,
                                                            uint64_t w_stride, int n_embd, float* dst,
                                                            int64_t dst_stride) {
  extern __shared__ uint4 shared_words[];
  __shared__ int order[kMaxK];
  __shared__ int count;
  __shared__ float y[kDownRows * kMaxK];
  const int t = static_cast<int>(blockIdx.y);
  const int row0 = static_cast<int>(blockIdx.x) * kDownRows;
  const int n_rows = min(kDownRows, n_embd - row0);
  __shared__ const uint8_t* mats[kMaxK];  // the down matrix of the q-th expert of the order
  __shared__ int id_of[kMaxK];
  __shared__ float weight_of[kMaxK];  // the route weight of the q-th expert of the order
  // Every load of the routes at once, then the sort in shared memory, then the matrices at once.
  const int tid = static_cast<int>(threadIdx.x);
  if (tid < routes.k) id_of[tid] = valid_id(routes, t, tid);
  __syncthreads();
  if (tid == 0) count = sorted_pairs(id_of, routes.k, order);
  __syncthreads();
  if (tid < count) {
    mats[tid] = static_cast<const uint8_t*>(routes.experts[id_of[order[tid]]].down);
    weight_of[tid] = routes.weights[static_cast<int64_t>(t) * routes.weights_stride + order[tid]];
  }
  // The token's k rows of h (Q8_1), in pair order j.
  auto* acts = reinterpret_cast<unsigned char*>(shared_words);
  const int act_row = n_spans * kQ8BlockBytes;
  stage_bytes<kDownThreads>(acts, hq + static_cast<uint64_t>(t) * static_cast<uint64_t>(routes.k) * act_row,
                            routes.k * act_row);
  float* part = reinterpret_cast<float*>(acts + staged_act_bytes(n_spans, routes.k));
  const int pitch = partial_pitch(n_spans);
  __syncthreads();
  const int n = count;
  // Dot d = q * n_rows + row: the q-th expert of the order, output row row0 + row.
  block_partials<Dec, kDownThreads, kDownUnroll>(
      n * n_rows, n_spans,
      [&](int d) { return mats[d / n_rows] + static_cast<uint64_t>(row0 + d % n_rows) * w_stride; },
      [&](int d) { return static_cast<const unsigned char*>(acts + order[d / n_rows] * act_row); }, part, pitch);
  __syncthreads();
  block_reduce<kDownThreads>(n * n_rows, n_spans, part, pitch, [&](int d, float v) { y[d] = v; });
  __syncthreads();
  const int row = static_cast<int>(threadIdx.x);
  if (row >= n_rows) return;
  float acc = 0.0f;
  for (int q = 0; q < n; ++q) {
    const float v = weight_of[q] * y[q * n_rows + row];
    acc = q == 0 ? v : acc + v;
  }
  dst[static_cast<int64_t>(t) * dst_stride + row0 + row] = acc;
}

int down_shared_bytes(int n_spans, int k) {
  return staged_act_bytes(n_spans, k) + kDownRows * k * partial_pitch(n_spans) * static_cast<int>(sizeof(float));
}

// The decoders the decode path is built for; other types take the general pipeline.
using DecodePathTypes = OneOf<GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K,
                              GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS>;
template <class F>
bool with_decode_type(uint32_t type, F&& f) {
  return with_decoder_in<DecodePathTypes>(type, f);
}

bool has_decode_type(uint32_t type) {
  return with_decode_type(type, [](auto) {});
}

}  // namespace

bool run_moe_routed_decode(Context& ctx, const strata_op& op) {
  const auto& table = *static_cast<const strata_expert_table*>(op.extra);
  const strata_tensor &x = op.src[0], &ids = op.src[1], &wt = op.src[2], &d = op.dst;
  const int64_t n_tok = x.ne[1], k = ids.ne[0];
  if (n_tok < 1 || n_tok > kMaxTokens || k < 1 || k > kMaxK) return false;
  if (table.gate_type != table.up_type || !has_decode_type(table.gate_type) || !has_decode_type(table.down_type)) {
    return false;
  }
  if (table.n_ff % kGateUpRows != 0 || table.n_embd % 32 != 0) return false;

  const int n_embd_spans = static_cast<int>(table.n_embd / 32), n_ff_spans = static_cast<int>(table.n_ff / 32);
  if (gate_up_shared_bytes(n_embd_spans) > kMaxSharedBytes ||
      down_shared_bytes(n_ff_spans, static_cast<int>(k)) > kMaxSharedBytes) {
    return false;
  }

  cudaStream_t stream = ctx.stream();
  const int64_t n_embd = table.n_embd, n_ff = table.n_ff, n_pairs = k * n_tok;
  auto* hq = static_cast<unsigned char*>(
      ctx.scratch(ScratchSlot::MoeHiddenQ8, static_cast<uint64_t>(n_pairs) * static_cast<uint64_t>(n_ff / 32) * kQ8BlockBytes));
  const Routes routes{static_cast<const int32_t*>(ids.data), static_cast<int64_t>(ids.nb[1] / sizeof(int32_t)),
                      static_cast<const float*>(wt.data),  static_cast<int64_t>(wt.nb[1] / sizeof(float)),
                      static_cast<int>(k),                  static_cast<int>(table.n_expert),
                      table.experts};
  const auto row_stride = [](uint32_t type, int64_t n) {
    return format::row_bytes(static_cast<GgmlType>(type), static_cast<uint64_t>(n));
  };
  with_decode_type(table.gate_type, [&](auto dec) {
    const dim3 grid(static_cast<unsigned>(n_ff / kGateUpRows), static_cast<unsigned>(n_pairs));
    gate_up_kernel<decltype(dec)><<<grid, kGateUpThreads, gate_up_shared_bytes(n_embd_spans), stream>>>(
        routes, static_cast<const float*>(x.data), static_cast<int64_t>(x.nb[1] / sizeof(float)), n_embd_spans,
        row_stride(table.gate_type, n_embd), static_cast<int>(n_ff), hq);
    check_launch("MOE_ROUTED (decode: Q8_1 of x, gate, up, SwiGLU)");
  });
  with_decode_type(table.down_type, [&](auto dec) {
    const dim3 grid(static_cast<unsigned>((n_embd + kDownRows - 1) / kDownRows), static_cast<unsigned>(n_tok));
    down_kernel<decltype(dec)><<<grid, kDownThreads, down_shared_bytes(n_ff_spans, static_cast<int>(k)), stream>>>(
        routes, hq, n_ff_spans, row_stride(table.down_type, n_ff), static_cast<int>(n_embd),
        static_cast<float*>(d.data), static_cast<int64_t>(d.nb[1] / sizeof(float)));
    check_launch("MOE_ROUTED (decode: down and sums)");
  });
  return true;
}

}  // namespace strata::gpu
