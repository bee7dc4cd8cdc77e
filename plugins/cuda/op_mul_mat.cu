// MUL_MAT: dst f32 [n_out, n_tok] = weight [n_in, n_out] x src1 f32 [n_in, n_tok] with the canonical arithmetic
// (core/src/reference/op_mul_mat.cpp). A quantized weight reads the columns quantized to Q8_1 once per window
// (and not again when the previous MUL_MAT quantized the same rows: q, k and v share the normed x). One token:
// block-wide dots (mul_mat_group.cuh); more: each warp decodes its row's spans once per pass of up to eight
// tokens. Float weights read the float columns.
#include <cstdint>
#include <string>
#include <type_traits>

#include "act_quant.cuh"
#include "matvec.cuh"
#include "mul_mat_group.cuh"
#include "mul_mat_tiled.cuh"
#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

constexpr int kRowsPerBlock = 4;                           // quantized: one warp per row
constexpr int kThreads = kWarp * kRowsPerBlock;
constexpr int kFloatRowsPerBlock = kThreads / kAccumulators;  // float: eight lanes per row

template <class Dec, int NT>
__global__ void __launch_bounds__(kThreads) mul_mat_q_kernel(const uint8_t* w, uint64_t w_stride, int rows,
                                                             int n_spans, const unsigned char* act, int n_tok,
                                                             float* dst, int64_t dst_stride) {
  const int row = static_cast<int>(blockIdx.x) * kRowsPerBlock + static_cast<int>(threadIdx.x) / kWarp;
  if (row >= rows) return;  // the whole warp leaves together
  const int t0 = static_cast<int>(blockIdx.y) * NT;
  const int n = n_tok - t0 < NT ? n_tok - t0 : NT;
  const uint64_t act_row = static_cast<uint64_t>(n_spans) * kQ8BlockBytes;
  const unsigned char* a[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) a[t] = act + static_cast<uint64_t>(t0 + (t < n ? t : 0)) * act_row;
  float out[NT];
  warp_dot_q<Dec, NT>(w + static_cast<uint64_t>(row) * w_stride, n_spans, a, n, out);
  if (threadIdx.x % kWarp == 0) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < n) dst[static_cast<int64_t>(t0 + t) * dst_stride + row] = out[t];
    }
  }
}

template <FloatWeight W, int NT>
__global__ void __launch_bounds__(kThreads) mul_mat_f_kernel(const uint8_t* w, uint64_t w_stride, int rows,
                                                             int64_t n_in, const float* x, int64_t x_stride,
                                                             int n_tok, float* dst, int64_t dst_stride) {
  const int group_row = static_cast<int>(blockIdx.x) * kFloatRowsPerBlock + static_cast<int>(threadIdx.x) / kAccumulators;
  const int row = group_row < rows ? group_row : rows - 1;  // every lane stays for the shuffles
  const int t0 = static_cast<int>(blockIdx.y) * NT;
  const int n = n_tok - t0 < NT ? n_tok - t0 : NT;
  const float* xs[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) xs[t] = x + static_cast<int64_t>(t0 + (t < n ? t : 0)) * x_stride;
  float out[NT];
  group8_dot_f<W, NT>(w + static_cast<uint64_t>(row) * w_stride, n_in, xs, n, out);
  if (group_row < rows && threadIdx.x % kAccumulators == 0) {
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < n) dst[static_cast<int64_t>(t0 + t) * dst_stride + row] = out[t];
    }
  }
}

// Float weights, few tokens (the router: [2048 x 128] F32): the fma chains of section 4 are 256 steps long and
// the weights are read once, so the time is one memory round trip plus the chain. A block of kStageThreads
// stages `rpb` weight rows (as floats) and the token rows in shared memory with all of every thread's loads in
// flight at once (one round trip: rpb = 1 and n_in = 2048 is four 16-byte loads a thread), then its first warp
// runs the chains out of shared memory: lane 8q + r holds accumulator r of row q (lanes past the block's rows
// repeat its last row and write nothing). One row a block spreads a small matrix over many SMs. Same operations
// in the same order as group8_dot_f.
constexpr int kStageRows = kWarp / kAccumulators;  // rows a block when there are many rows
constexpr int kStageThreads = 256;
constexpr int kStageLoads = 4;  // loads a thread issues before storing any
constexpr uint64_t kStageSharedBytes = 48 * 1024;
constexpr int kOneRowBlocksUpTo = 512;  // one row a block up to here (past it, fewer re-reads of the token rows)

// Row pitch (floats) of the staged weights: rows start 8 banks apart, so the warp's row groups hit distinct banks.
__host__ __device__ inline int64_t stage_pitch(int64_t n_in) { return n_in + (40 - n_in % 32) % 32; }

uint64_t stage_shared_bytes(int64_t n_in, int64_t n_tok, int rows_per_block) {
  return static_cast<uint64_t>(rows_per_block * stage_pitch(n_in) + n_tok * n_in) * sizeof(float);
}

// Copies the block's weight rows and the token rows into shared memory; `Unit` values at a time (float4 for
// aligned F32, else one value). Items [0, rpb * units) are weight units, the rest token units.
template <FloatWeight W, bool kVec4>
__device__ inline void stage_rows(const uint8_t* w, uint64_t w_stride, int rows, int row0, int rpb, int n_in,
                                  const float* x, int64_t x_stride, int n_tok, float* sw, int pitch, float* sx) {
  using Unit = typename std::conditional<kVec4, float4, float>::type;
  constexpr int kWidth = kVec4 ? 4 : 1;
  const int units = n_in / kWidth;
  const int w_items = rpb * units, items = w_items + n_tok * units;
  const int tid = static_cast<int>(threadIdx.x);
  for (int base = tid; base < items; base += kStageThreads * kStageLoads) {
    Unit v[kStageLoads];
    float* to[kStageLoads];
#pragma unroll
    for (int u = 0; u < kStageLoads; ++u) {
      const int e = base + u * kStageThreads;
      to[u] = nullptr;
      if (e < w_items) {
        const int q = e / units, c = e % units;
        const int row = row0 + q < rows ? row0 + q : rows - 1;
        const uint8_t* src = w + static_cast<uint64_t>(row) * w_stride;
        if constexpr (kVec4) {
          v[u] = reinterpret_cast<const float4*>(src)[c];
        } else {
          v[u] = load_weight<W>(src, c);
        }
        to[u] = sw + q * pitch + c * kWidth;
      } else if (e < items) {
        const int t = (e - w_items) / units, c = (e - w_items) % units;
        v[u] = reinterpret_cast<const Unit*>(x + static_cast<int64_t>(t) * x_stride)[c];
        to[u] = sx + t * n_in + c * kWidth;
      }
    }
#pragma unroll
    for (int u = 0; u < kStageLoads; ++u) {
      if (to[u] != nullptr) *reinterpret_cast<Unit*>(to[u]) = v[u];
    }
  }
}

template <FloatWeight W, int NT>
__global__ void __launch_bounds__(kStageThreads) mul_mat_f_staged_kernel(const uint8_t* w, uint64_t w_stride, int rows,
                                                                         int rpb, int n_in, bool vec4, const float* x,
                                                                         int64_t x_stride, int n_tok, float* dst,
                                                                         int64_t dst_stride) {
  extern __shared__ float4 staged_quads[];  // float4: the float4 stores below are aligned
  float* staged = reinterpret_cast<float*>(staged_quads);
  const int pitch = static_cast<int>(stage_pitch(n_in));
  float* sw = staged;                // [rpb][pitch]
  float* sx = staged + rpb * pitch;  // [n_tok][n_in]
  const int row0 = static_cast<int>(blockIdx.x) * rpb;
  bool done = false;
  if constexpr (W == FloatWeight::F32) {
    if (vec4) {
      stage_rows<W, true>(w, w_stride, rows, row0, rpb, n_in, x, x_stride, n_tok, sw, pitch, sx);
      done = true;
    }
  }
  if (!done) stage_rows<W, false>(w, w_stride, rows, row0, rpb, n_in, x, x_stride, n_tok, sw, pitch, sx);
  __syncthreads();
  const int tid = static_cast<int>(threadIdx.x);
  if (tid >= kWarp) return;
  const int group = tid / kAccumulators, r = tid % kAccumulators;
  const int q = group < rpb ? group : rpb - 1;
  const float* wr = sw + q * pitch;
  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
#pragma unroll 16
  for (int i = r; i < n_in; i += kAccumulators) {
    const float wv = wr[i];
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      if (t < n_tok) acc[t] = fma_c(wv, sx[t * n_in + i], acc[t]);
    }
  }
  const int row = row0 + q;
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const float v = tree8(acc[t]);
    if (t < n_tok && r == 0 && group < rpb && row < rows) dst[static_cast<int64_t>(t) * dst_stride + row] = v;
  }
}

unsigned blocks_for(int64_t items, int per_block) { return static_cast<unsigned>((items + per_block - 1) / per_block); }

Check check_alignment(const strata_tensor& t, const char* what, int align) {
  if ((reinterpret_cast<uintptr_t>(t.data) | t.nb[1]) % static_cast<unsigned>(align) != 0) {
    return std::string(what) + " data or row stride is not a multiple of " + std::to_string(align) +
           " bytes (the GPU kernels load its fields aligned)";
  }
  return std::nullopt;
}

}  // namespace

Check check_mul_mat(const strata_op& op) {
  const strata_tensor &w = op.src[0], &x = op.src[1], &d = op.dst;
  if (auto e = format::check_matrix(w, "src0 (weight)")) return e;
  if (auto e = format::check_matrix(x, "src1", GgmlType::F32)) return e;
  if (auto e = format::check_matrix(d, "dst", GgmlType::F32)) return e;
  const int align = decoder_alignment(w.type);
  const bool is_float = with_float_weight(w.type, [](auto) {});
  if (align == 0 && !is_float) return "src0 (weight) type " + format::type_name(w.type) + " has no GPU kernel";
  if (auto e = check_alignment(w, "src0 (weight)", is_float ? static_cast<int>(format::traits(static_cast<GgmlType>(w.type)).block_bytes) : align)) return e;
  if (auto e = check_alignment(x, "src1", 4)) return e;
  if (auto e = check_alignment(d, "dst", 4)) return e;
  if (x.ne[0] != w.ne[0]) {
    return "src1 rows have " + std::to_string(x.ne[0]) + " values, weight rows " + std::to_string(w.ne[0]);
  }
  if (d.ne[0] != w.ne[1] || d.ne[1] != x.ne[1]) return std::string("dst shape is not [weight rows, src1 rows]");
  if (w.ne[1] > INT32_MAX || x.ne[1] > 65535 || w.ne[0] > INT32_MAX) return std::string("shape too large for the GPU grid");
  return std::nullopt;
}

void run_mul_mat(Context& ctx, const strata_op& op) {
  if (run_mul_mat_tiled(ctx, op)) return;
  const strata_tensor &w = op.src[0], &x = op.src[1], &d = op.dst;
  const int64_t n_in = w.ne[0], n_tok = x.ne[1];
  const int rows = static_cast<int>(w.ne[1]);
  const auto* wdata = static_cast<const uint8_t*>(w.data);
  auto* dst = static_cast<float*>(d.data);
  const int64_t dst_stride = static_cast<int64_t>(d.nb[1] / sizeof(float));
  const int64_t x_stride = static_cast<int64_t>(x.nb[1] / sizeof(float));
  const auto* xdata = static_cast<const float*>(x.data);

  if (rows == 0 || n_tok == 0) return;
  const bool floating = with_float_weight(w.type, [&](auto wt) {
    const int rpb = rows <= kOneRowBlocksUpTo ? 1 : kStageRows;
    const uint64_t staged_bytes = stage_shared_bytes(n_in, n_tok, rpb);
    if (n_tok <= 4 && staged_bytes <= kStageSharedBytes) {
      // float4 staging: the weight rows and the token rows all 16-byte aligned.
      const bool vec4 = n_in % 4 == 0 && (reinterpret_cast<uintptr_t>(wdata) | w.nb[1]) % 16 == 0 &&
                        reinterpret_cast<uintptr_t>(xdata) % 16 == 0 && (n_tok == 1 || x.nb[1] % 16 == 0);
      with_tokens_per_pass(n_tok, [&](auto nt) {
        mul_mat_f_staged_kernel<decltype(wt)::value, decltype(nt)::value>
            <<<blocks_for(rows, rpb), kStageThreads, staged_bytes, ctx.stream()>>>(
                wdata, w.nb[1], rows, rpb, static_cast<int>(n_in), vec4, xdata, x_stride, static_cast<int>(n_tok), dst,
                dst_stride);
        check_launch("MUL_MAT (float weights, staged)");
      });
      return;
    }
    with_tokens_per_pass(n_tok, [&](auto nt) {
      constexpr int NT = decltype(nt)::value;
      const dim3 grid(blocks_for(rows, kFloatRowsPerBlock), blocks_for(n_tok, NT));
      mul_mat_f_kernel<decltype(wt)::value, NT><<<grid, kThreads, 0, ctx.stream()>>>(
          wdata, w.nb[1], rows, n_in, xdata, x_stride, static_cast<int>(n_tok), dst, dst_stride);
      check_launch("MUL_MAT (float weights)");
    });
  });
  if (floating) return;

  const uint64_t act_bytes = static_cast<uint64_t>(n_in / 32) * kQ8BlockBytes * static_cast<uint64_t>(n_tok);
  void* act = ctx.scratch(ScratchSlot::ActQ8, act_bytes);
  QuantizedActivation& cached = ctx.quantized();
  if (cached.src != x.data || cached.n_in != n_in || cached.n_tok != n_tok || cached.row_stride != x.nb[1]) {
    launch_quantize_q8_1(xdata, x_stride, n_in, n_tok, act, ctx.stream());
    cached = {x.data, n_in, n_tok, x.nb[1]};
  }
  if (n_tok == 1) {
    const RowGroup one{{wdata}, {w.nb[1]}, {rows}, {w.type}, {dst}, 1};
    if (launch_mul_mat_rows(ctx, one, static_cast<int>(n_in / 32), static_cast<const unsigned char*>(act))) return;
  }
  with_decoder(w.type, [&](auto dec) {
    with_tokens_per_pass(n_tok, [&](auto nt) {
      constexpr int NT = decltype(nt)::value;
      const dim3 grid(blocks_for(rows, kRowsPerBlock), blocks_for(n_tok, NT));
      mul_mat_q_kernel<decltype(dec), NT><<<grid, kThreads, 0, ctx.stream()>>>(
          wdata, w.nb[1], rows, static_cast<int>(n_in / 32), static_cast<const unsigned char*>(act),
          static_cast<int>(n_tok), dst, dst_stride);
      check_launch("MUL_MAT");
    });
  });
}

}  // namespace strata::gpu
