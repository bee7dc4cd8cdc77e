// The canonical exponential and SiLU (docs/CANONICAL_ARITHMETIC.md section 5), operation for operation as
// strata::format::exp_c / silu_c, callable from host and device so that the host tests can compare the bits.
// The plugin builds with --fmad=false: every fma below is an explicit fmaf, every other operation rounds alone.
#pragma once

#include <cstdint>
#include <cstring>

#include "gpu_runtime.cuh"

namespace strata::gpu {

__host__ __device__ __forceinline__ float canon_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

__host__ __device__ __forceinline__ uint32_t canon_bits(float f) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

// IEEE (correctly rounded) division on both sides; on the device stated explicitly rather than left to -prec-div.
__host__ __device__ __forceinline__ float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// 2^k for k in [-126, 127], from its exponent bits.
__host__ __device__ __forceinline__ float canon_pow2(int k) {
  return canon_from_bits(static_cast<uint32_t>(k + 127) << 23);
}

__host__ __device__ __forceinline__ float exp_c(float x) {
  if (x != x) return x;  // NaN stays NaN (payload kept)
  if (x > canon_from_bits(0x42b17218u)) return canon_from_bits(0x7f800000u);
  if (x < canon_from_bits(0xc2cff1b5u)) return 0.0f;
  // k = round-half-even(x / ln2); r = x - k*ln2 with ln2 split in two.
  const float k = rintf(x * canon_from_bits(0x3fb8aa3bu));
  float r = fmaf(k, -canon_from_bits(0x3f317200u), x);
  r = fmaf(k, -canon_from_bits(0x35bfbe8eu), r);
  float p = canon_from_bits(0x39500d01u);
  p = fmaf(p, r, canon_from_bits(0x3ab60b61u));
  p = fmaf(p, r, canon_from_bits(0x3c088889u));
  p = fmaf(p, r, canon_from_bits(0x3d2aaaabu));
  p = fmaf(p, r, canon_from_bits(0x3e2aaaabu));
  p = fmaf(p, r, 0.5f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  // The range checks bound k to [-150, 128]; outside the normal exponents, two exact power-of-two scalings.
  const int ki = static_cast<int>(k);
  if (ki > 127) return (p * canon_pow2(127)) * canon_pow2(ki - 127);
  if (ki < -126) return (p * canon_pow2(ki + 126)) * canon_pow2(-126);
  return p * canon_pow2(ki);
}

// x / (1 + exp_c(-x)): one negation, one exp_c, one addition, one division.
__host__ __device__ __forceinline__ float silu_c(float x) { return div_rn(x, 1.0f + exp_c(-x)); }

// silu_c(g) * u: the SwiGLU of section 3 step 3.
__host__ __device__ __forceinline__ float swiglu_c(float g, float u) { return silu_c(g) * u; }

}  // namespace strata::gpu
