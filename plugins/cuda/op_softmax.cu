// SOFTMAX: dst = softmax(src0 * f[0]) along each row (docs/CANONICAL_ARITHMETIC.md section 6): e_i = s * x_i,
// m = max e, y_i = exp(e_i - m) / sum_j exp(e_j - m); in float with exp_c by default, in double rounded to float
// once with canonical_double (softmax_rows_f64ref, as the reference). One block per row.
#include <string>

#include "canonical_math.cuh"
#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"
#include "warp_reduce.cuh"

namespace strata::gpu {
namespace {

using format::GgmlType;

constexpr int kBlock = 256;

// Float (the default): e_i = s * x_i, m = max e, p_i = exp_c(e_i - m), total = the sum of p in the block's order
// (thread t adds i = t, t + 256, ... in order from +0.0, then block_sum: the warp's xor butterfly and the warps in
// order), y_i = p_i / total (IEEE division). One block a row: a row's bits do not depend on the other rows.
__global__ void __launch_bounds__(kBlock) softmax_rows(const char* x_base, uint64_t x_stride, char* d_base,
                                                       uint64_t d_stride, int64_t n, float scale) {
  __shared__ float partial[kBlock / 32];
  const auto* x = reinterpret_cast<const float*>(x_base + static_cast<uint64_t>(blockIdx.x) * x_stride);
  auto* y = reinterpret_cast<float*>(d_base + static_cast<uint64_t>(blockIdx.x) * d_stride);
  const int tid = static_cast<int>(threadIdx.x);
  float m = -INFINITY;
  for (int64_t i = tid; i < n; i += kBlock) m = fmaxf(m, scale * x[i]);
  m = block_max(m, partial);
  float total = 0.0f;
  for (int64_t i = tid; i < n; i += kBlock) total += exp_c(scale * x[i] - m);
  total = block_sum(total, partial);
  // In place (dst == src0) is safe: every read of the row above precedes the barrier in block_sum.
  for (int64_t i = tid; i < n; i += kBlock) y[i] = div_c(exp_c(scale * x[i] - m), total);
}

// Double (canonical_double), as the reference: the same steps in double with the library's exp, rounded to float.
__global__ void __launch_bounds__(kBlock) softmax_rows_f64ref(const char* x_base, uint64_t x_stride, char* d_base,
                                                              uint64_t d_stride, int64_t n, float scale_f) {
  __shared__ double partial[kBlock / 32];
  const double scale = static_cast<double>(scale_f);
  const auto* x = reinterpret_cast<const float*>(x_base + static_cast<uint64_t>(blockIdx.x) * x_stride);
  auto* y = reinterpret_cast<float*>(d_base + static_cast<uint64_t>(blockIdx.x) * d_stride);
  const int tid = static_cast<int>(threadIdx.x);
  double m = -INFINITY;
  for (int64_t i = tid; i < n; i += kBlock) m = fmax(m, scale * static_cast<double>(x[i]));
  m = block_max(m, partial);
  double total = 0.0;
  for (int64_t i = tid; i < n; i += kBlock) total += exp(scale * static_cast<double>(x[i]) - m);
  total = block_sum(total, partial);
  for (int64_t i = tid; i < n; i += kBlock)
    y[i] = static_cast<float>(exp(scale * static_cast<double>(x[i]) - m) / total);
}

}  // namespace

Check check_softmax(const strata_op& op) {
  const strata_tensor &x = op.src[0], &d = op.dst;
  if (auto e = format::check_rows(x, "src0", GgmlType::F32)) return e;
  if (auto e = format::check_rows(d, "dst", GgmlType::F32)) return e;
  if (d.ne[0] != x.ne[0] || format::row_count(d) != format::row_count(x)) {
    return std::string("dst must have src0's shape");
  }
  return std::nullopt;
}

void run_softmax(Context& ctx, const strata_op& op) {
  const strata_tensor &x = op.src[0], &d = op.dst;
  (ctx.options().canonical_double ? softmax_rows_f64ref : softmax_rows)<<<static_cast<unsigned>(format::row_count(x)),
                                                                            kBlock, 0, ctx.stream()>>>(
      static_cast<const char*>(x.data), x.nb[1], static_cast<char*>(d.data), d.nb[1], x.ne[0], op.f[0]);
  check_launch("SOFTMAX");
}

}  // namespace strata::gpu
