// Scalar pieces of docs/CANONICAL_ARITHMETIC.md written once for host and device: explicit fma, IEEE division,
// binary16/E8M0 conversions, the four-way int8 dot, exp_c and silu_c. The device pass uses the GPU intrinsics;
// the host pass (tests/cuda_host) the same operations from <cmath>, so the host tests check the arithmetic the
// kernels run. The plugin builds with --fmad=false: no product below is contracted into an fma by the compiler.
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

// Section 5: exp_c, operation for operation.
__host__ __device__ inline float exp_c(float x) {
  if (x != x) return x;
  if (x > float_from_bits(0x42b17218u)) return float_from_bits(0x7f800000u);
  if (x < float_from_bits(0xc2cff1b5u)) return 0.0f;
#ifdef STRATA_DEVICE_PASS
  const float k = rintf(x * float_from_bits(0x3fb8aa3bu));
#else
  const float k = std::rint(x * float_from_bits(0x3fb8aa3bu));
#endif
  float r = fma_c(k, -float_from_bits(0x3f317200u), x);
  r = fma_c(k, -float_from_bits(0x35bfbe8eu), r);
  float p = float_from_bits(0x39500d01u);
  p = fma_c(p, r, float_from_bits(0x3ab60b61u));
  p = fma_c(p, r, float_from_bits(0x3c088889u));
  p = fma_c(p, r, float_from_bits(0x3d2aaaabu));
  p = fma_c(p, r, float_from_bits(0x3e2aaaabu));
  p = fma_c(p, r, 0.5f);
  p = fma_c(p, r, 1.0f);
  p = fma_c(p, r, 1.0f);
  const int ki = static_cast<int>(k);
  if (ki > 127) return (p * pow2_c(127)) * pow2_c(ki - 127);
  if (ki < -126) return (p * pow2_c(ki + 126)) * pow2_c(-126);
  return p * pow2_c(ki);
}

// x / (1 + exp_c(-x)).
__host__ __device__ inline float silu_c(float x) { return div_c(x, 1.0f + exp_c(-x)); }

}  // namespace strata::gpu
