// RMS_NORM: dst = src0 * (1 / sqrt(mean(src0^2) + eps)) [* src1], per row of n. As the reference: the sum of
// squares in double, the scale (float)(1 / sqrt(s / n + eps)) in double, then one float product per factor.
// Short rows (per-head norms of q and k) take a warp each, long rows (the model's n_embd) a block each.
#include <string>

#include "ops.hpp"
#include "strata/format/tensor_checks.hpp"
#include "warp_reduce.cuh"

namespace strata::gpu {
namespace {

using format::GgmlType;

constexpr int kBlock = 256;
constexpr int64_t kWarpRowMax = 256;  // rows up to this many values take one warp each

struct NormArgs {
  const char* x;
  const float* w;  // nullptr: no weight
  char* dst;
  uint64_t x_stride, d_stride;
  int64_t n, rows;
  double eps;
};

__device__ __forceinline__ void norm_row(const NormArgs& a, int64_t r, double sum, int first, int step) {
  const auto* x = reinterpret_cast<const float*>(a.x + static_cast<uint64_t>(r) * a.x_stride);
  auto* y = reinterpret_cast<float*>(a.dst + static_cast<uint64_t>(r) * a.d_stride);
  const auto scale = static_cast<float>(1.0 / sqrt(sum / static_cast<double>(a.n) + a.eps));
  for (int64_t i = first; i < a.n; i += step) {
    float v = x[i] * scale;
    if (a.w != nullptr) v = v * a.w[i];
    y[i] = v;
  }
}

__device__ __forceinline__ double squares(const NormArgs& a, int64_t r, int first, int step) {
  const auto* x = reinterpret_cast<const float*>(a.x + static_cast<uint64_t>(r) * a.x_stride);
  double s = 0.0;
  for (int64_t i = first; i < a.n; i += step) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return s;
}

// One warp per row. In place (dst == src0) is safe: a lane rewrites only the values it read.
__global__ void rms_norm_warp_rows(NormArgs a) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (kBlock / kWarp) + threadIdx.x / kWarp;
  if (r >= a.rows) return;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const double sum = warp_sum(squares(a, r, lane, kWarp));
  norm_row(a, r, sum, lane, kWarp);
}

__global__ void rms_norm_block_rows(NormArgs a) {
  __shared__ double partial[kBlock / 32];
  const int64_t r = blockIdx.x;
  const double sum = block_sum(squares(a, r, static_cast<int>(threadIdx.x), kBlock), partial);
  norm_row(a, r, sum, static_cast<int>(threadIdx.x), kBlock);
}

}  // namespace

Check check_rms_norm(const strata_op& op) {
  const strata_tensor &x = op.src[0], &w = op.src[1], &d = op.dst;
  if (auto e = format::check_rows(x, "src0", GgmlType::F32)) return e;
  if (auto e = format::check_rows(d, "dst", GgmlType::F32)) return e;
  if (w.data != nullptr) {
    if (auto e = format::check_rows(w, "src1 (weight)", GgmlType::F32)) return e;
    if (format::row_count(w) != 1 || w.ne[0] != x.ne[0]) {
      return "src1 (weight) must be one row of " + std::to_string(x.ne[0]) + " values";
    }
  }
  if (d.ne[0] != x.ne[0] || format::row_count(d) != format::row_count(x)) {
    return std::string("dst must have src0's shape");
  }
  return std::nullopt;
}

void run_rms_norm(Context& ctx, const strata_op& op) {
  const strata_tensor &x = op.src[0], &w = op.src[1], &d = op.dst;
  NormArgs a{static_cast<const char*>(x.data),
             static_cast<const float*>(w.data),
             static_cast<char*>(d.data),
             x.nb[1],
             d.nb[1],
             x.ne[0],
             format::row_count(x),
             static_cast<double>(op.f[0])};
  if (a.n <= kWarpRowMax) {
    const int64_t rows_per_block = kBlock / kWarp;
    const auto blocks = static_cast<unsigned>((a.rows + rows_per_block - 1) / rows_per_block);
    rms_norm_warp_rows<<<blocks, kBlock, 0, ctx.stream()>>>(a);
  } else {
    rms_norm_block_rows<<<static_cast<unsigned>(a.rows), kBlock, 0, ctx.stream()>>>(a);
  }
  check_launch("RMS_NORM");
}

}  // namespace strata::gpu
