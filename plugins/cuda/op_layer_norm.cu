// LAYER_NORM (backend 1.7, Qwen3-VL's projector): dst = (x - mean) / sqrt(var + eps) [* src1] [+ src2] per row of
// src0 (layer_norm_row.cuh): one block of 256 threads per row; in float by default (compensated sums in a fixed
// order), with canonical_double in double, the reference's bits (the `_f64ref` kernel). Rows are nb[1] apart in
// src0 and dst; the weight and bias are optional (data NULL). In place (dst == src0) is safe: every value is read
// for the sums before the block's last barrier, and then read and written by one thread.
#include <cstdint>
#include <string>

#include "layer_norm_row.cuh"
#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

using format::GgmlType;

struct LayerNormArgs {
  const char* x;
  const float* w;  // nullptr: no weight
  const float* b;  // nullptr: no bias
  char* dst;
  uint64_t x_stride, d_stride;
  int64_t n;
  float eps;
};

__global__ void __launch_bounds__(kLnBlock) layer_norm_rows(LayerNormArgs a) {
  __shared__ FloatPair lanes[kLnBlock];
  const int64_t r = blockIdx.x;
  const int t = static_cast<int>(threadIdx.x);
  const auto* x = reinterpret_cast<const float*>(a.x + static_cast<uint64_t>(r) * a.x_stride);
  auto* y = reinterpret_cast<float*>(a.dst + static_cast<uint64_t>(r) * a.d_stride);
  FloatPair sum{0.0f, 0.0f};
  for (int64_t i = t; i < a.n; i += kLnBlock) sum = ln_add(sum, x[i]);
  const FloatPair mean = ln_mean(ln_block_sum(sum, lanes), a.n);
  FloatPair sq{0.0f, 0.0f};
  for (int64_t i = t; i < a.n; i += kLnBlock) sq = ln_add_square(sq, ln_deviation(x[i], mean));
  const float scale = ln_scale(ln_block_sum(sq, lanes), a.n, a.eps);
  for (int64_t i = t; i < a.n; i += kLnBlock) y[i] = ln_value(ln_deviation(x[i], mean), scale, a.w, a.b, i);
}

__global__ void __launch_bounds__(kLnBlock) layer_norm_rows_f64ref(LayerNormArgs a) {
  __shared__ double stats[2];
  const int64_t r = blockIdx.x;
  const int t = static_cast<int>(threadIdx.x);
  const auto* x = reinterpret_cast<const float*>(a.x + static_cast<uint64_t>(r) * a.x_stride);
  auto* y = reinterpret_cast<float*>(a.dst + static_cast<uint64_t>(r) * a.d_stride);
  if (t == 0) ln_stats_f64ref(x, a.n, a.eps, &stats[0], &stats[1]);
  __syncthreads();
  const double mean = stats[0], scale = stats[1];
  for (int64_t i = t; i < a.n; i += kLnBlock) y[i] = ln_value_f64ref(x[i], mean, scale, a.w, a.b, i);
}

bool aligned_floats(const strata_tensor& t) { return reinterpret_cast<uintptr_t>(t.data) % sizeof(float) == 0; }

// src1 (weight) or src2 (bias): absent, or one row of n floats.
Check check_vector(const strata_tensor& v, const char* what, int64_t n) {
  if (v.data == nullptr) return std::nullopt;
  if (auto e = format::check_rows(v, what, GgmlType::F32)) return e;
  if (format::row_count(v) != 1 || v.ne[0] != n) return std::string(what) + " must be one row of " + std::to_string(n) + " values";
  if (!aligned_floats(v)) return std::string(what) + " data is not 4-byte aligned";
  return std::nullopt;
}

}  // namespace

Check check_layer_norm(const strata_op& op) {
  const strata_tensor &x = op.src[0], &d = op.dst;
  if (auto e = format::check_rows(x, "src0", GgmlType::F32)) return e;
  if (auto e = format::check_rows(d, "dst", GgmlType::F32)) return e;
  if (!aligned_floats(x) || !aligned_floats(d)) return std::string("src0 or dst data is not 4-byte aligned");
  for (int k = 0; k < 4; ++k) {
    if (d.ne[k] != x.ne[k]) return std::string("dst must have src0's shape");
  }
  if (x.ne[0] > kLnMaxRow) return "rows of " + std::to_string(x.ne[0]) + " values are longer than " + std::to_string(kLnMaxRow);
  if (format::row_count(x) > INT32_MAX) return "src0 has " + std::to_string(format::row_count(x)) + " rows (at most 2^31 - 1)";
  if (auto e = check_vector(op.src[1], "src1 (weight)", x.ne[0])) return e;
  if (auto e = check_vector(op.src[2], "src2 (bias)", x.ne[0])) return e;
  return std::nullopt;
}

void run_layer_norm(Context& ctx, const strata_op& op) {
  const strata_tensor &x = op.src[0], &d = op.dst;
  const LayerNormArgs a{static_cast<const char*>(x.data),
                        static_cast<const float*>(op.src[1].data),
                        static_cast<const float*>(op.src[2].data),
                        static_cast<char*>(d.data),
                        x.nb[1],
                        d.nb[1],
                        x.ne[0],
                        op.f[0]};
  const auto rows = static_cast<unsigned>(format::row_count(x));
  (ctx.options().canonical_double ? layer_norm_rows_f64ref : layer_norm_rows)<<<rows, kLnBlock, 0, ctx.stream()>>>(a);
  check_launch("LAYER_NORM");
}

}  // namespace strata::gpu
