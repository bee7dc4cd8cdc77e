// RMS_NORM: dst = src0 * (1 / sqrt(mean(src0^2) + eps)) [* src1], per row of n (docs/CANONICAL_ARITHMETIC.md
// section 6, rms_row.cuh): in float by default; with canonical_double in double rounded to float once (the
// _f64ref kernels), the same bits as the reference and cpu_avx2. Short rows (per-head norms of q and k) take a
// warp of 32 lanes each, long rows (the model's n_embd) a block of 256 threads each.
#include <string>

#include "ops.hpp"
#include "rms_row.cuh"
#include "strata/format/tensor_checks.hpp"

namespace strata::gpu {
namespace {

using format::GgmlType;

struct NormArgs {
  const char* x;
  const float* w;  // nullptr: no weight
  char* dst;
  uint64_t x_stride, d_stride;
  int64_t n, rows;
  float eps;
};

// T is the arithmetic: float (the default kernels) or double (the _f64ref kernels, canonical_double).
template <class T>
__device__ __forceinline__ void norm_row(const NormArgs& a, int64_t r, T sum, int first, int step) {
  const auto* x = reinterpret_cast<const float*>(a.x + static_cast<uint64_t>(r) * a.x_stride);
  auto* y = reinterpret_cast<float*>(a.dst + static_cast<uint64_t>(r) * a.d_stride);
  const T scale = rms_scale(sum, a.n, static_cast<T>(a.eps));
  for (int64_t i = first; i < a.n; i += step) y[i] = rms_value(x[i], scale, a.w, i);
}

// One 32-lane group per row (n <= 256): lane l holds values l + 32 s in slot s. In place (dst == src0) is safe: a
// lane rewrites only the values it read, after the group's shuffles.
template <class T>
__device__ __forceinline__ void group_rows(const NormArgs& a) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * (kNormBlock / kNormGroup) + threadIdx.x / kNormGroup;
  if (r >= a.rows) return;  // whole groups leave together, so the shuffles below see only live lanes
  const int lane = static_cast<int>(threadIdx.x) % kNormGroup;
  const auto* x = reinterpret_cast<const float*>(a.x + static_cast<uint64_t>(r) * a.x_stride);
  float v[kNormSlots];
#pragma unroll
  for (int s = 0; s < kNormSlots; ++s) {
    const int64_t i = lane + s * kNormGroup;
    v[s] = i < a.n ? x[i] : 0.0f;
  }
  norm_row<T>(a, r, norm_group_sum_squares<T>(v), lane, kNormGroup);
}

template <class T>
__device__ __forceinline__ void block_rows(const NormArgs& a) {
  __shared__ T lanes[kNormBlock + 1];
  const int64_t r = blockIdx.x;
  const int t = static_cast<int>(threadIdx.x);
  const auto* x = reinterpret_cast<const float*>(a.x + static_cast<uint64_t>(r) * a.x_stride);
  T acc = 0;
  for (int64_t i = t; i < a.n; i += kNormBlock) acc = norm_accumulate(acc, x[i]);
  norm_row<T>(a, r, norm_block_sum(acc, lanes), t, kNormBlock);
}

__global__ void __launch_bounds__(kNormBlock) rms_norm_group_rows(NormArgs a) { group_rows<float>(a); }
__global__ void __launch_bounds__(kNormBlock) rms_norm_block_rows(NormArgs a) { block_rows<float>(a); }
__global__ void __launch_bounds__(kNormBlock) rms_norm_group_rows_f64ref(NormArgs a) { group_rows<double>(a); }
__global__ void __launch_bounds__(kNormBlock) rms_norm_block_rows_f64ref(NormArgs a) { block_rows<double>(a); }

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
             op.f[0]};
  const bool f64 = ctx.options().canonical_double;
  if (a.n <= kNormGroupRowMax) {
    const int64_t rows_per_block = kNormBlock / kNormGroup;
    const auto blocks = static_cast<unsigned>((a.rows + rows_per_block - 1) / rows_per_block);
    (f64 ? rms_norm_group_rows_f64ref : rms_norm_group_rows)<<<blocks, kNormBlock, 0, ctx.stream()>>>(a);
  } else {
    (f64 ? rms_norm_block_rows_f64ref : rms_norm_block_rows)<<<static_cast<unsigned>(a.rows), kNormBlock, 0,
                                                                 ctx.stream()>>>(a);
  }
  check_launch("RMS_NORM");
}

}  // namespace strata::gpu
