// The canonical exponential and SiLU (docs/CANONICAL_ARITHMETIC.md section 5), operation for operation as
// strata::format::exp_c / silu_c, callable from host and device so that the host tests can compare the bits.
// The plugin builds with --fmad=false: every fma below is an explicit fmaf, every other operation rounds alone.
// NaN results take x86's bits (x86_nan below), so byte comparisons with the CPU hold for NaN and Inf inputs too.
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

// NaN results with the bits x86 (SSE/AVX) gives them: the reference and the CPU backends are the bytes every
// device is compared with. x86 propagates a NaN operand, quietened (the first operand's when both are NaN), and
// makes the "indefinite" NaN 0xffc00000 for an invalid operation (inf - inf, 0 * inf, inf / inf, 0 / 0); a GPU
// gives 0x7fffffff in every case. Applied only when the IEEE result is already NaN, so finite results are untouched.
__host__ __device__ __forceinline__ float x86_nan(float a, float b) {
  if (a != a) return canon_from_bits(canon_bits(a) | 0x00400000u);
  if (b != b) return canon_from_bits(canon_bits(b) | 0x00400000u);
  return canon_from_bits(0xffc00000u);
}

__host__ __device__ __forceinline__ float add_x86(float a, float b) {
  const float r = a + b;
  return r == r ? r : x86_nan(a, b);
}

__host__ __device__ __forceinline__ float mul_x86(float a, float b) {
  const float r = a * b;
  return r == r ? r : x86_nan(a, b);
}

// IEEE (correctly rounded) division, stated explicitly on the device rather than left to -prec-div.
__host__ __device__ __forceinline__ float div_x86(float a, float b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  const float r = __fdiv_rn(a, b);
#else
  const float r = a / b;
#endif
  return r == r ? r : x86_nan(a, b);
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

// x / (1 + exp_c(-x)): one negation, one exp_c, one addition, one division. The negation flips the sign bit
// (as x86 does, NaN included; a GPU's negation may canonicalize a NaN).
__host__ __device__ __forceinline__ float silu_c(float x) {
  const float neg = canon_from_bits(canon_bits(x) ^ 0x80000000u);
  return div_x86(x, add_x86(1.0f, exp_c(neg)));
}

// silu_c(g) * u: the SwiGLU of section 3 step 3.
__host__ __device__ __forceinline__ float swiglu_c(float g, float u) { return mul_x86(silu_c(g), u); }

}  // namespace strata::gpu
