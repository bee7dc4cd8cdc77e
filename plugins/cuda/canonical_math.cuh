// Scalar pieces of docs/CANONICAL_ARITHMETIC.md written once for host and device: explicit fma, IEEE division,
// binary16/bf16/E8M0 conversions, the four-way int8 dot, exp_c, silu_c, swiglu_c and swiglu_oai_c, operation for
// operation as strata::format's. The host pass (tests/cuda_host) runs the same operations, so the host tests check the
// arithmetic the kernels run. The plugin builds with --fmad=false: every fma below is explicit, every other
// operation rounds alone. NaN results take x86's bits (x86_nan below), so byte comparisons with the CPU hold for
// NaN and Inf inputs too.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "gpu_runtime.cuh"
#include "strata/format/fp16.hpp"

#if defined(__HIP__) || defined(__HIPCC__)
#include <hip/hip_fp16.h>
#else
#include <cuda_fp16.h>
#endif

#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define STRATA_DEVICE_PASS 1
#endif

namespace strata::gpu {

__host__ __device__ inline float fma_c(float a, float b, float c) {
#ifdef STRATA_DEVICE_PASS
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

__host__ __device__ inline float div_c(float a, float b) {
#ifdef STRATA_DEVICE_PASS
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// IEEE (correctly rounded) square root, explicit on the device rather than left to -prec-sqrt.
__host__ __device__ inline float sqrt_c(float a) {
#ifdef STRATA_DEVICE_PASS
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

__host__ __device__ inline float float_from_bits(uint32_t u) {
#ifdef STRATA_DEVICE_PASS
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// binary16 -> binary32 (exact). __half2float is exact on every input, subnormals and NaNs included.
__host__ __device__ inline float half_to_float(uint16_t h) {
#ifdef STRATA_DEVICE_PASS
  return __half2float(__ushort_as_half(h));
#else
  return format::fp16_to_fp32(h);
#endif
}

// binary32 -> binary16, round to nearest even (overflow to inf, NaN stays NaN).
__host__ __device__ inline uint16_t float_to_half(float f) {
#ifdef STRATA_DEVICE_PASS
  return __half_as_ushort(__float2half_rn(f));
#else
  return format::fp32_to_fp16(f);
#endif
}

__host__ __device__ inline float bf16_to_float(uint16_t b) { return float_from_bits(static_cast<uint32_t>(b) << 16); }

// MXFP4's scale: 2^(e-128), half the E8M0 value (the values table is doubled); e < 2 is a binary32 subnormal.
__host__ __device__ inline float e8m0_half_to_float(uint8_t e) {
  return float_from_bits(e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23);
}

// c + the four signed int8 products of a and b.
__host__ __device__ inline int dot4(uint32_t a, uint32_t b, int c) {
#ifdef STRATA_DEVICE_PASS
  return dp4a(static_cast<int>(a), static_cast<int>(b), c);
#else
  for (int i = 0; i < 4; ++i) {
    c += static_cast<int>(static_cast<int8_t>(a >> (8 * i))) * static_cast<int>(static_cast<int8_t>(b >> (8 * i)));
  }
  return c;
#endif
}

// 2^e for e in [-126, 127], from its exponent bits.
__host__ __device__ inline float pow2_c(int e) { return float_from_bits(static_cast<uint32_t>(e + 127) << 23); }



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

// 2^k for k in [-126, 127], from its exponent bits.
__host__ __device__ __forceinline__ float canon_pow2(int k) {
  return canon_from_bits(static_cast<uint32_t>(k + 127) << 23);
}

#if defined(STRATA_NONCANONICAL) && defined(STRATA_DEVICE_PASS)
// The benchmark-only build (STRATA_NONCANONICAL, CMakeLists.txt): no NaN fix-ups, approximate division, the
// hardware's fast exponential; with --use_fast_math the compiler contracts and flushes subnormals as it likes.
__device__ __forceinline__ float add_x86(float a, float b) { return a + b; }
__device__ __forceinline__ float mul_x86(float a, float b) { return a * b; }
__device__ __forceinline__ float div_x86(float a, float b) { return __fdividef(a, b); }
__device__ __forceinline__ float exp_c(float x) { return __expf(x); }
#else
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


__host__ __device__ __forceinline__ float exp_c(float x) {
  if (x != x) return x;  // NaN stays NaN (payload kept)
  if (x > canon_from_bits(0x42b17218u)) return canon_from_bits(0x7f800000u);
  if (x < canon_from_bits(0xc2cff1b5u)) return 0.0f;
  // k = round-half-even(x / ln2); r = x - k*ln2 with ln2 split in two.
  const float k = rintf(x * canon_from_bits(0x3fb8aa3bu));
  float r = fma_c(k, -canon_from_bits(0x3f317200u), x);
  r = fma_c(k, -canon_from_bits(0x35bfbe8eu), r);
  float p = canon_from_bits(0x39500d01u);
  p = fma_c(p, r, canon_from_bits(0x3ab60b61u));
  p = fma_c(p, r, canon_from_bits(0x3c088889u));
  p = fma_c(p, r, canon_from_bits(0x3d2aaaabu));
  p = fma_c(p, r, canon_from_bits(0x3e2aaaabu));
  p = fma_c(p, r, 0.5f);
  p = fma_c(p, r, 1.0f);
  p = fma_c(p, r, 1.0f);
  // The range checks bound k to [-150, 128]; outside the normal exponents, two exact power-of-two scalings.
  const int ki = static_cast<int>(k);
  if (ki > 127) return (p * canon_pow2(127)) * canon_pow2(ki - 127);
  if (ki < -126) return (p * canon_pow2(ki + 126)) * canon_pow2(-126);
  return p * canon_pow2(ki);
}
#endif  // STRATA_NONCANONICAL

// x / (1 + exp_c(-x)): one negation, one exp_c, one addition, one division. The negation flips the sign bit
// (as x86 does, NaN included; a GPU's negation may canonicalize a NaN).
__host__ __device__ __forceinline__ float silu_c(float x) {
  const float neg = canon_from_bits(canon_bits(x) ^ 0x80000000u);
  return div_x86(x, add_x86(1.0f, exp_c(neg)));
}

// silu_c(g) * u: the SwiGLU of section 3 step 3.
__host__ __device__ __forceinline__ float swiglu_c(float g, float u) { return mul_x86(silu_c(g), u); }

// gpt-oss's clamped SwiGLU (format::swiglu_oai_c, operation for operation): gc = min(g, limit), uc = clamp(u,
// -limit, limit) by comparisons, so a NaN stays NaN (fminf would drop it); then (gc / (1 + exp_c(-(alpha * gc)))) *
// (uc + 1). The negation flips the sign bit as x86 does.
__host__ __device__ __forceinline__ float swiglu_oai_c(float g, float u, float alpha, float limit) {
  const float gc = limit < g ? limit : g;
  const float neg_limit = canon_from_bits(canon_bits(limit) ^ 0x80000000u);
  const float lo = u < neg_limit ? neg_limit : u;
  const float uc = limit < lo ? limit : lo;
  const float ag = mul_x86(alpha, gc);
  const float den = add_x86(1.0f, exp_c(canon_from_bits(canon_bits(ag) ^ 0x80000000u)));
  return mul_x86(div_x86(gc, den), add_x86(uc, 1.0f));
}

}  // namespace strata::gpu
