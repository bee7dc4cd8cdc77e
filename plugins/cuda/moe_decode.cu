// The decode path of MOE_ROUTED (moe_decode.cuh).
//
// gate_up_kernel: block (c, p) owns rows 32c..32c+31 of pair p = t * k + j's gate and up matrices; each warp
// computes two of those rows of both matrices (four row dots with their loads in flight together), the block's
// first warp forms h = silu_c(g) * u for the 32 rows and writes their Q8_1 block (scale from the 32 values in
// element order, as quantize_block_q8_1 does).
// down_kernel: block (c, t) owns kDownRowsPerBlock output rows of token t; each warp one row: the down rows of the
// token's experts in ascending id (stable for equal ids), kDownChunk at a time with their loads in flight, then
// out = w1 * y1; out = out + w2 * y2; ... in that order.
#include "act_quant.cuh"
#include "matvec.cuh"
#include "moe_decode.cuh"
#include "ops.hpp"
#include "strata/format/types.hpp"

namespace strata::gpu {
namespace {

constexpr int kMaxTokens = 8;
constexpr int kMaxK = 16;
constexpr int kGateUpWarps = 16;                     // 32 rows, two per warp
constexpr int kGateUpThreads = kGateUpWarps * kWarp;
constexpr int kGateUpRows = 32;                      // one Q8_1 block of h
constexpr int kDownWarps = 8;
constexpr int kDownThreads = kDownWarps * kWarp;
constexpr int kDownChunk = 4;

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

template <class Dec>
__global__ void __launch_bounds__(kGateUpThreads, 1) gate_up_kernel(Routes routes, const unsigned char* xq, int n_spans,
                                                                 uint64_t w_stride, int n_ff, unsigned char* hq) {
  __shared__ float sg[kGateUpRows], su[kGateUpRows];
  const int p = static_cast<int>(blockIdx.y);
  const int t = p / routes.k, j = p % routes.k;
  const int id = valid_id(routes, t, j);
  if (id < 0) return;  // the whole block: the pair is left out
  const strata_expert_weights& e = routes.experts[id];
  const auto* gate = static_cast<const uint8_t*>(e.gate);
  const auto* up = static_cast<const uint8_t*>(e.up);
  const int warp = static_cast<int>(threadIdx.x) / kWarp, lane = static_cast<int>(threadIdx.x) % kWarp;
  const int row0 = static_cast<int>(blockIdx.x) * kGateUpRows;
  const unsigned char* act = xq + static_cast<uint64_t>(t) * static_cast<uint64_t>(n_spans) * kQ8BlockBytes;
  for (int local = 2 * warp; local < kGateUpRows; local += 2 * kGateUpWarps) {
    const uint64_t r0 = static_cast<uint64_t>(row0 + local) * w_stride;
    const uint8_t* rows[4] = {gate + r0, up + r0, gate + r0 + w_stride, up + r0 + w_stride};
    const unsigned char* acts[4] = {act, act, act, act};
    float out[4];
    warp_dot_q_rows<Dec, 4, true>(rows, acts, n_spans, out);
    if (lane == 0) {
      sg[local] = out[0];
      su[local] = out[1];
      sg[local + 1] = out[2];
      su[local + 1] = out[3];
    }
  }
  __syncthreads();
  // h for the block's 32 rows, one per thread, then its Q8_1 block by the first warp (kWarp >= 32).
  __shared__ float sh[kGateUpRows];
  if (threadIdx.x < kGateUpRows) sh[threadIdx.x] = silu_c(sg[threadIdx.x]) * su[threadIdx.x];
  __syncthreads();
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

template <class Dec>
__global__ void __launch_bounds__(kDownThreads, 1) down_kernel(Routes routes, const unsigned char* hq, int n_spans,
                                                            uint64_t w_stride, int n_embd, float* dst,
                                                            int64_t dst_stride) {
  __shared__ int order[kMaxK];  // the token's valid j in ascending expert id
  __shared__ int count;
  const int t = static_cast<int>(blockIdx.y);
  if (threadIdx.x == 0) {
    int n = 0;
    for (int j = 0; j < routes.k; ++j) {
      const int id = valid_id(routes, t, j);
      if (id < 0) continue;
      int at = n++;  // insertion into the sorted prefix; equal ids keep their j order
      while (at > 0 && valid_id(routes, t, order[at - 1]) > id) {
        order[at] = order[at - 1];
        --at;
      }
      order[at] = j;
    }
    count = n;
  }
  __syncthreads();
  const int row = static_cast<int>(blockIdx.x) * kDownWarps + static_cast<int>(threadIdx.x) / kWarp;
  if (row >= n_embd) return;
  const int n = count;
  const uint64_t act_row = static_cast<uint64_t>(n_spans) * kQ8BlockBytes;
  float acc = 0.0f;
  for (int c = 0; c < n; c += kDownChunk) {
    const uint8_t* rows[kDownChunk];
    const unsigned char* acts[kDownChunk];
    float w[kDownChunk];
#pragma unroll
    for (int q = 0; q < kDownChunk; ++q) {
      const int i = c + q < n ? c + q : n - 1;  // past the end: a repeat, not used
      const int j = order[i];
      const int id = valid_id(routes, t, j);
      rows[q] = static_cast<const uint8_t*>(routes.experts[id].down) + static_cast<uint64_t>(row) * w_stride;
      acts[q] = hq + static_cast<uint64_t>(t * routes.k + j) * act_row;
      w[q] = routes.weights[static_cast<int64_t>(t) * routes.weights_stride + j];
    }
    float y[kDownChunk];
    warp_dot_q_rows<Dec, kDownChunk, false>(rows, acts, n_spans, y);
#pragma unroll
    for (int q = 0; q < kDownChunk; ++q) {
      if (c + q < n) {
        const float v = w[q] * y[q];
        acc = c + q == 0 ? v : acc + v;
      }
    }
  }
  if (threadIdx.x % kWarp == 0) dst[static_cast<int64_t>(t) * dst_stride + row] = acc;
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

  cudaStream_t stream = ctx.stream();
  const int64_t n_embd = table.n_embd, n_ff = table.n_ff, n_pairs = k * n_tok;
  const auto* xdata = static_cast<const float*>(x.data);
  const auto x_stride = static_cast<int64_t>(x.nb[1] / sizeof(float));
  void* xq = ctx.scratch(ScratchSlot::ActQ8, static_cast<uint64_t>(n_embd / 32) * kQ8BlockBytes * static_cast<uint64_t>(n_tok));
  auto* hq = static_cast<unsigned char*>(
      ctx.scratch(ScratchSlot::MoeHiddenQ8, static_cast<uint64_t>(n_pairs) * static_cast<uint64_t>(n_ff / 32) * kQ8BlockBytes));
  QuantizedActivation& cached = ctx.quantized();
  if (cached.src != x.data || cached.n_in != n_embd || cached.n_tok != n_tok || cached.row_stride != x.nb[1]) {
    launch_quantize_q8_1(xdata, x_stride, n_embd, n_tok, xq, stream);
    cached = {x.data, n_embd, n_tok, x.nb[1]};
  }

  const Routes routes{static_cast<const int32_t*>(ids.data), static_cast<int64_t>(ids.nb[1] / sizeof(int32_t)),
                      static_cast<const float*>(wt.data),  static_cast<int64_t>(wt.nb[1] / sizeof(float)),
                      static_cast<int>(k),                  static_cast<int>(table.n_expert),
                      table.experts};
  const auto row_stride = [](uint32_t type, int64_t n) {
    return format::row_bytes(static_cast<GgmlType>(type), static_cast<uint64_t>(n));
  };
  with_decode_type(table.gate_type, [&](auto dec) {
    const dim3 grid(static_cast<unsigned>(n_ff / kGateUpRows), static_cast<unsigned>(n_pairs));
    gate_up_kernel<decltype(dec)><<<grid, kGateUpThreads, 0, stream>>>(
        routes, static_cast<const unsigned char*>(xq), static_cast<int>(n_embd / 32), row_stride(table.gate_type, n_embd),
        static_cast<int>(n_ff), hq);
    check_launch("MOE_ROUTED (decode: gate, up, SwiGLU)");
  });
  with_decode_type(table.down_type, [&](auto dec) {
    const dim3 grid(static_cast<unsigned>((n_embd + kDownWarps - 1) / kDownWarps), static_cast<unsigned>(n_tok));
    down_kernel<decltype(dec)><<<grid, kDownThreads, 0, stream>>>(
        routes, hq, static_cast<int>(n_ff / 32), row_stride(table.down_type, n_ff), static_cast<int>(n_embd),
        static_cast<float*>(d.data), static_cast<int64_t>(d.nb[1] / sizeof(float)));
    check_launch("MOE_ROUTED (decode: down and sums)");
  });
  return true;
}

}  // namespace strata::gpu
