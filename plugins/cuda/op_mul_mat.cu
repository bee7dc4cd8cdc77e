// MUL_MAT: dst f32 [n_out, n_tok] = weight [n_in, n_out] x src1 f32 [n_in, n_tok] with the canonical arithmetic
// (core/src/reference/op_mul_mat.cpp). A quantized weight reads the columns quantized to Q8_1 once per window
// (and not again when the previous MUL_MAT quantized the same rows: q, k and v share the normed x). One token and
// windows of up to eight: block-wide dots (mul_mat_group.cuh), each weight span decoded once for all the tokens;
// where those do not take a shape (rows too long for their shared memory), each warp decodes its row's spans once
// per pass of up to eight tokens; from nine tokens the tiled products (mul_mat_tiled.cuh). Float weights read the
// float columns: below 16 tokens a group of eight lanes per row, more in tiles of four rows and eight tokens per
// group (the same chains).
// Backend 1.6: a stack of B matrices (src0 ne[2] = B, nb[2] apart; deepseek2's per-head products): src1
// [n_in, B, n_tok] and dst [n_out, B, n_tok], views with rows nb[1] and planes nb[2] apart; column (b, t) times
// matrix b, each exactly as a plain MUL_MAT's column (the same dot kernels, blockIdx.z the matrix; the Q8_1 copy
// holds the columns token-major, row t * B + b).
#include <cstdint>
#include <string>

#include "act_quant.cuh"
#include "matvec.cuh"
#include "mul_mat_group.cuh"
#include "mul_mat_staged.cuh"
#include "mul_mat_tiled.cuh"
#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

constexpr int kRowsPerBlock = 4;                           // quantized: one warp per row
constexpr int kThreads = kWarp * kRowsPerBlock;
constexpr int kFloatRowsPerBlock = kThreads / kAccumulators;  // float: eight lanes per row

// Where matrix b = blockIdx.z of a stack lies (all zero for one matrix): its weight plane, its first Q8_1 row (the
// copy holds tok_rows rows a token, row t * tok_rows + b), its first dst value.
struct StackPlanes {
  uint64_t w_plane;   // bytes between the matrices
  int tok_rows;       // Q8_1 rows a token (B; 1 without a stack)
  int64_t x_plane;    // floats between src1's columns of consecutive matrices (float weights)
  int64_t dst_plane;  // floats between dst's columns of consecutive matrices
};

template <class Dec, int NT>
__global__ void __launch_bounds__(kThreads) mul_mat_q_kernel(const uint8_t* w, uint64_t w_stride, int rows,
                                                             int n_spans, const unsigned char* act, int n_tok,
                                                             float* dst, int64_t dst_stride, StackPlanes sp) {
  const int row = static_cast<int>(blockIdx.x) * kRowsPerBlock + static_cast<int>(threadIdx.x) / kWarp;
  if (row >= rows) return;  // the whole warp leaves together
  const int b = static_cast<int>(blockIdx.z);
  w += static_cast<uint64_t>(b) * sp.w_plane;
  dst += static_cast<int64_t>(b) * sp.dst_plane;
  const int t0 = static_cast<int>(blockIdx.y) * NT;
  const int n = n_tok - t0 < NT ? n_tok - t0 : NT;
  const uint64_t act_row = static_cast<uint64_t>(n_spans) * kQ8BlockBytes;
  const unsigned char* a[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    a[t] = act + (static_cast<uint64_t>(t0 + (t < n ? t : 0)) * static_cast<uint64_t>(sp.tok_rows) + b) * act_row;
  }
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
                                                             int n_tok, float* dst, int64_t dst_stride,
                                                             StackPlanes sp) {
  const int b = static_cast<int>(blockIdx.z);
  w += static_cast<uint64_t>(b) * sp.w_plane;
  x += static_cast<int64_t>(b) * sp.x_plane;
  dst += static_cast<int64_t>(b) * sp.dst_plane;
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

// Float weights, many tokens (the vision encoder's products, float models' prompts): a group of eight lanes per
// kRowTile rows, a block kTokTile tokens; the bits of mul_mat_f_kernel (group8_dot_f_tile).
constexpr int kFloatTileThreads = 256;
constexpr int kFloatTileRows = kFloatTileThreads / kAccumulators * kRowTile;  // rows a block
template <FloatWeight W>
__global__ void __launch_bounds__(kFloatTileThreads) mul_mat_f_tile_kernel(const uint8_t* w, uint64_t w_stride, int rows,
                                                                         int64_t n_in, const float* x, int64_t x_stride,
                                                                         int n_tok, float* dst, int64_t dst_stride) {
  const int row0 = static_cast<int>(blockIdx.x) * kFloatTileRows + static_cast<int>(threadIdx.x) / kAccumulators * kRowTile;
  const int t0 = static_cast<int>(blockIdx.y) * kTokTile;
  const uint8_t* wr[kRowTile];
#pragma unroll
  for (int k = 0; k < kRowTile; ++k) wr[k] = w + static_cast<uint64_t>(min(row0 + k, rows - 1)) * w_stride;
  const float* xs[kTokTile];
#pragma unroll
  for (int t = 0; t < kTokTile; ++t) xs[t] = x + static_cast<int64_t>(min(t0 + t, n_tok - 1)) * x_stride;
  float out[kRowTile][kTokTile];
  group8_dot_f_tile<W>(wr, n_in, xs, out);
  if (threadIdx.x % kAccumulators != 0) return;
#pragma unroll
  for (int k = 0; k < kRowTile; ++k) {
#pragma unroll
    for (int t = 0; t < kTokTile; ++t) {
      if (row0 + k < rows && t0 + t < n_tok) dst[static_cast<int64_t>(t0 + t) * dst_stride + row0 + k] = out[k][t];
    }
  }
}

// Float weights, few tokens (the router): mul_mat_staged.cuh.
template <FloatWeight W, int NT>
__global__ void __launch_bounds__(kStageThreads) mul_mat_f_staged_kernel(const uint8_t* w, uint64_t w_stride, int rows,
                                                                         int rpb, int n_in, bool vec4, const float* x,
                                                                         int64_t x_stride, int n_tok, float* dst,
                                                                         int64_t dst_stride) {
  extern __shared__ float4 staged_quads[];  // float4: the float4 stores are aligned
  staged_dot_rows<W, NT>(w, w_stride, rows, rpb, n_in, vec4, x, x_stride, n_tok, dst, dst_stride,
                         reinterpret_cast<float*>(staged_quads));
}

unsigned blocks_for(int64_t items, int per_block) { return static_cast<unsigned>((items + per_block - 1) / per_block); }

Check check_alignment(const strata_tensor& t, const char* what, int align) {
  if ((reinterpret_cast<uintptr_t>(t.data) | t.nb[1]) % static_cast<unsigned>(align) != 0) {
    return std::string(what) + " data or row stride is not a multiple of " + std::to_string(align) +
           " bytes (the GPU kernels load its fields aligned)";
  }
  return std::nullopt;
}

// A stack of matrices (src0 ne[2] = B > 1): each matrix as one weight, src1 and dst strided views.
Check check_mul_mat_stack(const strata_op& op) {
  const strata_tensor &w = op.src[0], &x = op.src[1], &d = op.dst;
  const int64_t stack = w.ne[2];
  strata_tensor one = w;
  one.ne[2] = 1;
  if (auto e = format::check_matrix(one, "src0 (a weight of the stack)")) return e;
  if (w.ne[3] != 1) return std::string("src0 (weight) has a fourth dimension");
  const int align = decoder_alignment(w.type);
  const bool is_float = with_float_weight(w.type, [](auto) {});
  if (align == 0 && !is_float) return "src0 (weight) type " + format::type_name(w.type) + " has no GPU kernel";
  const int w_align = is_float ? static_cast<int>(format::traits(static_cast<GgmlType>(w.type)).block_bytes) : align;
  if (auto e = check_alignment(w, "src0 (weight)", w_align)) return e;
  if (w.nb[2] % static_cast<unsigned>(w_align) != 0) return std::string("src0 (weight) matrices are misaligned (nb[2])");
  if (auto e = check_strided_rows(x, "src1", GgmlType::F32)) return e;
  if (auto e = check_strided_rows(d, "dst", GgmlType::F32)) return e;
  if (x.ne[0] != w.ne[0] || x.ne[1] != stack) {
    return "src1 must be [" + std::to_string(w.ne[0]) + ", " + std::to_string(stack) + ", n_tok] (a column per matrix)";
  }
  if (d.ne[0] != w.ne[1] || d.ne[1] != stack || d.ne[2] != x.ne[2]) {
    return "dst must be [" + std::to_string(w.ne[1]) + ", " + std::to_string(stack) + ", " + std::to_string(x.ne[2]) + "]";
  }
  if (!is_float && w.ne[0] % 32 != 0) return std::string("src0 (weight) rows are not whole Q8_1 blocks of 32 values");
  if (w.ne[1] > INT32_MAX || w.ne[0] > INT32_MAX || x.ne[2] > 65535 || stack > 65535 || x.ne[2] * stack > INT32_MAX) {
    return std::string("shape too large for the GPU grid");
  }
  return std::nullopt;
}

}  // namespace

Check check_mul_mat(const strata_op& op) {
  const strata_tensor &w = op.src[0], &x = op.src[1], &d = op.dst;
  if (w.ne[2] > 1) return check_mul_mat_stack(op);
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

namespace {

// A stack of B matrices: the plain kernels with blockIdx.z the matrix (no staged, row-group or tiled path).
void run_mul_mat_stack(Context& ctx, const strata_op& op) {
  const strata_tensor &w = op.src[0], &x = op.src[1], &d = op.dst;
  const int64_t n_in = w.ne[0], stack = w.ne[2], n_tok = x.ne[2];
  const int rows = static_cast<int>(w.ne[1]);
  const auto* wdata = static_cast<const uint8_t*>(w.data);
  auto* dst = static_cast<float*>(d.data);
  const auto* xdata = static_cast<const float*>(x.data);
  StackPlanes sp{w.nb[2], static_cast<int>(stack), static_cast<int64_t>(x.nb[1] / sizeof(float)),
                 static_cast<int64_t>(d.nb[1] / sizeof(float))};
  const int64_t dst_stride = static_cast<int64_t>(d.nb[2] / sizeof(float));
  const bool floating = with_float_weight(w.type, [&](auto wt) {
    with_tokens_per_pass(n_tok, [&](auto nt) {
      constexpr int NT = decltype(nt)::value;
      const dim3 grid(blocks_for(rows, kFloatRowsPerBlock), blocks_for(n_tok, NT), static_cast<unsigned>(stack));
      mul_mat_f_kernel<decltype(wt)::value, NT><<<grid, kThreads, 0, ctx.stream()>>>(
          wdata, w.nb[1], rows, n_in, xdata, static_cast<int64_t>(x.nb[2] / sizeof(float)), static_cast<int>(n_tok),
          dst, dst_stride, sp);
      check_launch("MUL_MAT (stack, float weights)");
    });
  });
  if (floating) return;

  // The columns' Q8_1 copy, token-major (row t * B + b): one pass when the columns are evenly spaced (then it is
  // also the copy a plain MUL_MAT over those rows would make), else a pass a token.
  const uint64_t act_row = static_cast<uint64_t>(n_in / 32) * kQ8BlockBytes;
  const int64_t n_rows = stack * n_tok;
  auto* act = static_cast<unsigned char*>(ctx.scratch(ScratchSlot::ActQ8, act_row * static_cast<uint64_t>(n_rows)));
  QuantizedActivation& cached = ctx.quantized();
  const int64_t x_row = static_cast<int64_t>(x.nb[1] / sizeof(float));
  if (n_tok == 1 || x.nb[2] == x.nb[1] * static_cast<uint64_t>(stack)) {
    if (cached.src != x.data || cached.n_in != n_in || cached.n_tok != n_rows || cached.row_stride != x.nb[1]) {
      launch_quantize_q8_1(xdata, x_row, n_in, n_rows, act, ctx.stream());
      cached = {x.data, n_in, n_rows, x.nb[1]};
    }
  } else {
    for (int64_t t = 0; t < n_tok; ++t) {
      launch_quantize_q8_1(xdata + t * static_cast<int64_t>(x.nb[2] / sizeof(float)), x_row, n_in, stack,
                           act + static_cast<uint64_t>(t * stack) * act_row, ctx.stream());
    }
    cached = {};
  }
  with_decoder(w.type, [&](auto dec) {
    with_tokens_per_pass(n_tok, [&](auto nt) {
      constexpr int NT = decltype(nt)::value;
      const dim3 grid(blocks_for(rows, kRowsPerBlock), blocks_for(n_tok, NT), static_cast<unsigned>(stack));
      mul_mat_q_kernel<decltype(dec), NT><<<grid, kThreads, 0, ctx.stream()>>>(
          wdata, w.nb[1], rows, static_cast<int>(n_in / 32), act, static_cast<int>(n_tok), dst, dst_stride, sp);
      check_launch("MUL_MAT (stack)");
    });
  });
}

}  // namespace

void run_mul_mat(Context& ctx, const strata_op& op) {
  if (op.src[0].ne[2] > 1) return run_mul_mat_stack(ctx, op);
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
    const StagedPlan plan = staged_plan(w, x);
    if (plan.staged) {
      for (int64_t t0 = 0; t0 < n_tok; t0 += kStageMaxTokens) {  // launches of up to kStageMaxTokens tokens
        const int64_t part = n_tok - t0 < kStageMaxTokens ? n_tok - t0 : kStageMaxTokens;
        with_tokens_per_pass(part, [&](auto nt) {
          mul_mat_f_staged_kernel<decltype(wt)::value, decltype(nt)::value>
              <<<plan.blocks, kStageThreads, plan.shared_bytes, ctx.stream()>>>(
                  wdata, w.nb[1], rows, plan.rows_per_block, static_cast<int>(n_in), plan.vec4, xdata + t0 * x_stride,
                  x_stride, static_cast<int>(part), dst + t0 * dst_stride, dst_stride);
          check_launch("MUL_MAT (float weights, staged)");
        });
      }
      return;
    }
    if (n_tok >= 2 * kTokTile) {
      const dim3 grid(blocks_for(rows, kFloatTileRows), blocks_for(n_tok, kTokTile));
      mul_mat_f_tile_kernel<decltype(wt)::value><<<grid, kFloatTileThreads, 0, ctx.stream()>>>(
          wdata, w.nb[1], rows, n_in, xdata, x_stride, static_cast<int>(n_tok), dst, dst_stride);
      check_launch("MUL_MAT (float weights, tiles of rows and tokens)");
      return;
    }
    with_tokens_per_pass(n_tok, [&](auto nt) {
      constexpr int NT = decltype(nt)::value;
      const dim3 grid(blocks_for(rows, kFloatRowsPerBlock), blocks_for(n_tok, NT));
      mul_mat_f_kernel<decltype(wt)::value, NT><<<grid, kThreads, 0, ctx.stream()>>>(
          wdata, w.nb[1], rows, n_in, xdata, x_stride, static_cast<int>(n_tok), dst, dst_stride, StackPlanes{0, 1, 0, 0});
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
  if (n_tok <= kMaxWindowTokens) {
    const RowGroup one{{wdata}, {w.nb[1]}, {rows}, {w.type}, {dst}, 1, {nullptr}, {dst_stride}};
    if (launch_mul_mat_rows(ctx, one, static_cast<int>(n_in / 32), static_cast<const unsigned char*>(act),
                            static_cast<int>(n_tok), static_cast<uint64_t>(n_in / 32) * kQ8BlockBytes)) {
      return;
    }
  }
  with_decoder(w.type, [&](auto dec) {
    with_tokens_per_pass(n_tok, [&](auto nt) {
      constexpr int NT = decltype(nt)::value;
      const dim3 grid(blocks_for(rows, kRowsPerBlock), blocks_for(n_tok, NT));
      mul_mat_q_kernel<decltype(dec), NT><<<grid, kThreads, 0, ctx.stream()>>>(
          wdata, w.nb[1], rows, static_cast<int>(n_in / 32), static_cast<const unsigned char*>(act),
          static_cast<int>(n_tok), dst, dst_stride, StackPlanes{0, 1, 0, 0});
      check_launch("MUL_MAT");
    });
  });
}

}  // namespace strata::gpu
