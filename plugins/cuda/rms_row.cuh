// RMS_NORM's per-row arithmetic (docs/CANONICAL_ARITHMETIC.md section 6), shared by op_rms_norm.cu and the fused
// kernels so every path runs the same operations: the sum of squares in the 256-lane order (a 32-lane group per
// short row, a block of 256 threads per long row), scale = 1 / sqrt(s / n + eps), y_i = (float)((x_i * scale) * w_i).
#pragma once

#include <cmath>
#include <cstdint>

#include "gpu_runtime.cuh"
#include "strata/format/canonical_double.hpp"

namespace strata::gpu {

constexpr int kNormBlock = format::kNormLanes;  // thread t of a long row's block is accumulator t
constexpr int kNormGroup = 32;                  // lanes of a short row (a half wavefront where kWarp is 64)
constexpr int kNormSlots = format::kNormLanes / kNormGroup;
constexpr int64_t kNormGroupRowMax = format::kNormLanes;  // rows up to this many values take one group each

__host__ __device__ inline double rms_scale(double sum, int64_t n, double eps) {
  return 1.0 / sqrt(sum / static_cast<double>(n) + eps);
}

// One output value; `w` is nullptr when the norm has no weight.
__host__ __device__ inline float rms_value(float x, double scale, const float* w, int64_t i) {
  double v = static_cast<double>(x) * scale;
  if (w != nullptr) v = v * static_cast<double>(w[i]);
  return static_cast<float>(v);
}

// The tree steps m = 16 .. 1 among the 32 lanes of a group (xor partners stay inside the group; a + b == b + a,
// so every lane ends with accumulator 0's value).
__device__ __forceinline__ double norm_group_tree(double v) {
  for (int m = kNormGroup / 2; m > 0; m /= 2) {
    const int lo = shfl_xor(__double2loint(v), m), hi = shfl_xor(__double2hiint(v), m);
    v = v + __hiloint2double(hi, lo);
  }
  return v;
}

// A short row's sum of squares, in every lane of its group: lane l holds values l + 32 s in v[s] (+0.0 past the
// row's end). Steps m = 128, 64, 32 combine the slots; adding an unused slot's +0.0 changes nothing.
__device__ __forceinline__ double norm_group_sum_squares(const float (&v)[kNormSlots]) {
  double acc[kNormSlots];
#pragma unroll
  for (int s = 0; s < kNormSlots; ++s) acc[s] = static_cast<double>(v[s]) * static_cast<double>(v[s]);
#pragma unroll
  for (int m = kNormSlots / 2; m > 0; m /= 2) {
#pragma unroll
    for (int s = 0; s < m; ++s) acc[s] = acc[s] + acc[s + m];
  }
  return norm_group_tree(acc[0]);
}

// One term of a long row's accumulator: thread t adds x_t^2, x_(t+256)^2, ... in this order from +0.0.
__device__ __forceinline__ double norm_accumulate(double acc, float x) {
  return acc + static_cast<double>(x) * static_cast<double>(x);
}

// A long row's sum of squares from the accumulators of the block's 256 threads, returned to every thread. Every
// thread of the block must call it (it has barriers).
__device__ __forceinline__ double norm_block_sum(double acc) {
  __shared__ double lanes[kNormBlock];
  __shared__ double total;
  const int t = static_cast<int>(threadIdx.x);
  lanes[t] = acc;
  __syncthreads();
  for (int m = kNormBlock / 2; m >= kNormGroup; m /= 2) {
    if (t < m) lanes[t] = lanes[t] + lanes[t + m];
    __syncthreads();
  }
  if (t < kNormGroup) {
    const double v = norm_group_tree(lanes[t]);
    if (t == 0) total = v;
  }
  __syncthreads();
  return total;
}

}  // namespace strata::gpu
