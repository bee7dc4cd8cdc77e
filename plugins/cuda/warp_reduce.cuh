// Warp- and block-wide sums and maxima for the float ops (norms, softmaxes, attention). Written against kWarp
// (32 or 64 lanes) and the shim's shuffles; doubles travel as two 32-bit halves.
#pragma once

#include "gpu_runtime.cuh"

namespace strata::gpu {

__device__ __forceinline__ double shfl_xor_double(double v, int mask) {
  const int lo = shfl_xor(__double2loint(v), mask);
  const int hi = shfl_xor(__double2hiint(v), mask);
  return __hiloint2double(hi, lo);
}

// Every lane gets the sum (resp. maximum) of the warp's values.
__device__ __forceinline__ double warp_sum(double v) {
  for (int m = kWarp / 2; m > 0; m /= 2) v += shfl_xor_double(v, m);
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int m = kWarp / 2; m > 0; m /= 2) v += shfl_xor(v, m);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int m = kWarp / 2; m > 0; m /= 2) v = fmaxf(v, shfl_xor(v, m));
  return v;
}
__device__ __forceinline__ double warp_max(double v) {
  for (int m = kWarp / 2; m > 0; m /= 2) v = fmax(v, shfl_xor_double(v, m));
  return v;
}

// Every thread of the block gets the block's sum (resp. maximum). `shared` holds one value per warp; the block is
// a whole number of warps. Ends with a barrier after the last read, so `shared` may be reused at once.
template <class T>
__device__ __forceinline__ T block_sum(T v, T* shared) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int n_warps = static_cast<int>(blockDim.x) / kWarp;
  v = warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = shared[0];
  for (int w = 1; w < n_warps; ++w) total += shared[w];
  __syncthreads();
  return total;
}

template <class T>
__device__ __forceinline__ T block_max(T v, T* shared) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp, warp = static_cast<int>(threadIdx.x) / kWarp;
  const int n_warps = static_cast<int>(blockDim.x) / kWarp;
  v = warp_max(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T best = shared[0];
  for (int w = 1; w < n_warps; ++w) best = best > shared[w] ? best : shared[w];
  __syncthreads();
  return best;
}

}  // namespace strata::gpu
