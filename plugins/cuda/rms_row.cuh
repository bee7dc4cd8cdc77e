// RMS_NORM's per-row arithmetic (docs/CANONICAL_ARITHMETIC.md section 6), shared by op_rms_norm.cu and the fused
// kernels so every path runs the same operations. Two definitions, chosen per launch by Options::canonical_double:
//   float (the default): the sum of squares in float in the 256-lane order, each accumulator A = fma(x, x, A) from
//     +0.0; scale = 1 / sqrt(s / n + eps) as IEEE division, addition, square root and division; y_i = (x_i * scale)
//     * w_i, two rounded multiplications.
//   double (the `_f64ref` kernels, the CPU backends' arithmetic): the sum of squares in double in the same order,
//     scale = 1 / sqrt(s / n + eps) in double, y_i = (float)((x_i * scale) * w_i).
// A short row takes a 32-lane group (a half wavefront where kWarp is 64), a long row a block of 256 threads; both
// follow the 256-lane order, so a row's bits do not depend on the path or on the other rows of the launch.
#pragma once

#include <cmath>
#include <cstdint>

#include "canonical_math.cuh"
#include "gpu_runtime.cuh"
#include "strata/format/canonical_double.hpp"

namespace strata::gpu {

constexpr int kNormBlock = format::kNormLanes;  // thread t of a long row's block is accumulator t
constexpr int kNormGroup = 32;                  // lanes of a short row (a half wavefront where kWarp is 64)
constexpr int kNormSlots = format::kNormLanes / kNormGroup;
constexpr int64_t kNormGroupRowMax = format::kNormLanes;  // rows up to this many values take one group each

// ---- double (canonical_double) ----

__host__ __device__ __forceinline__ double rms_scale(double sum, int64_t n, double eps) {
  return 1.0 / sqrt(sum / static_cast<double>(n) + eps);
}

// One output value, weighted by w when `weighted`.
__host__ __device__ __forceinline__ float rms_value_w(float x, double scale, bool weighted, float w) {
  double v = static_cast<double>(x) * scale;
  if (weighted) v = v * static_cast<double>(w);
  return static_cast<float>(v);
}

// One term of an accumulator: x^2 is exact in double.
__host__ __device__ __forceinline__ double norm_accumulate(double acc, float x) {
  return acc + static_cast<double>(x) * static_cast<double>(x);
}

// ---- float (the default) ----

__host__ __device__ __forceinline__ float rms_scale(float sum, int64_t n, float eps) {
  return div_c(1.0f, sqrt_c(div_c(sum, static_cast<float>(n)) + eps));
}

__host__ __device__ __forceinline__ float rms_value_w(float x, float scale, bool weighted, float w) {
  float v = x * scale;
  if (weighted) v = v * w;
  return v;
}

__host__ __device__ __forceinline__ float norm_accumulate(float acc, float x) { return fma_c(x, x, acc); }

// One output value of either type; `w` is nullptr when the norm has no weight.
template <class T>
__host__ __device__ __forceinline__ float rms_value(float x, T scale, const float* w, int64_t i) {
  return rms_value_w(x, scale, w != nullptr, w != nullptr ? w[i] : 0.0f);
}

// ---- the lane order, for either type ----

#if defined(__CUDACC__) || defined(__HIPCC__)
__device__ __forceinline__ double shfl_xor_any(double v, int m) {
  const int lo = shfl_xor(__double2loint(v), m), hi = shfl_xor(__double2hiint(v), m);
  return __hiloint2double(hi, lo);
}
__device__ __forceinline__ float shfl_xor_any(float v, int m) { return shfl_xor(v, m); }

// The tree steps m = 16 .. 1 among the 32 lanes of a group (xor partners stay inside the group; a + b == b + a,
// so every lane ends with accumulator 0's value).
template <class T>
__device__ __forceinline__ T norm_group_tree(T v) {
  for (int m = kNormGroup / 2; m > 0; m /= 2) v = v + shfl_xor_any(v, m);
  return v;
}

// A short row's sum of squares, in every lane of its group: lane l holds values l + 32 s in v[s] (+0.0 past the
// row's end), accumulator l + 32 s's one term. Steps m = 128, 64, 32 combine the slots; adding an unused slot's
// +0.0 changes nothing.
template <class T>
__device__ __forceinline__ T norm_group_sum_squares(const float (&v)[kNormSlots]) {
  T acc[kNormSlots];
#pragma unroll
  for (int s = 0; s < kNormSlots; ++s) acc[s] = norm_accumulate(T(0), v[s]);
#pragma unroll
  for (int m = kNormSlots / 2; m > 0; m /= 2) {
#pragma unroll
    for (int s = 0; s < m; ++s) acc[s] = acc[s] + acc[s + m];
  }
  return norm_group_tree(acc[0]);
}

// A long row's sum of squares from the accumulators of the block's 256 threads (thread t adds x_t^2,
// x_(t+256)^2, ... in this order from +0.0 with norm_accumulate), returned to every thread. Every thread of the
// block must call it (it has barriers); `lanes` is kNormBlock + 1 values of shared memory.
template <class T>
__device__ __forceinline__ T norm_block_sum(T acc, T* lanes) {
  const int t = static_cast<int>(threadIdx.x);
  lanes[t] = acc;
  __syncthreads();
  for (int m = kNormBlock / 2; m >= kNormGroup; m /= 2) {
    if (t < m) lanes[t] = lanes[t] + lanes[t + m];
    __syncthreads();
  }
  if (t < kNormGroup) {
    const T v = norm_group_tree(lanes[t]);
    if (t == 0) lanes[kNormBlock] = v;
  }
  __syncthreads();
  return lanes[kNormBlock];
}
#endif

// The same sum on one thread (host tests): acc[l] adds x_l^2, x_(l+256)^2, ... then the tree m = 128 .. 1.
template <class T>
__host__ __device__ inline T norm_sum_squares_serial(const float* x, int64_t n) {
  T acc[kNormBlock];
  for (int l = 0; l < kNormBlock; ++l) acc[l] = T(0);
  for (int64_t i = 0; i < n; ++i) acc[i % kNormBlock] = norm_accumulate(acc[i % kNormBlock], x[i]);
  for (int m = kNormBlock / 2; m > 0; m /= 2) {
    for (int l = 0; l < m; ++l) acc[l] = acc[l] + acc[l + m];
  }
  return acc[0];
}

}  // namespace strata::gpu
